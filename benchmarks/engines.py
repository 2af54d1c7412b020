"""``python -m benchmarks engines``: the same sentences through every engine, in one run.

Rows: the shipped model (``--model``, default ``space/models/en-de``) through ``generate(engine="pytorch")``,
``engine="ctranslate2"`` float32 and int8 (a ``CTranslate2Engine``); and the paper block (``--paper``, default
``space/models/variants/paper``) through ``engine="pytorch"`` and through ``transformers``' ``MarianMTModel.generate``
on its ``export --format marian`` folder.  Columns: sentences/s at greedy and beam 4, batch 1 and batched
(``--batch-size``), each with its BLEU on the same ``--n`` Multi30k val sentences and its agreement with the
PyTorch row of the same model.  Ratios are against that PyTorch row, measured in the same run; every cell is the
best of ``--repeats`` rounds, the rows of a cell run one after another (a shared machine's load hits them alike).
Conversions happen before the clock (their time is printed).
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

import torch

from transformer_hub import Transformer
from transformer_hub.training.data import default_data_dir, corpus_file, read_lines
from transformer_hub.decoding import generate
from transformer_hub.export import CTranslate2Engine, export_marian
from transformer_hub.training.metrics import score

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"greedy b1": dict(strategy="greedy", batch=False), "beam4 b1": dict(strategy="beam", batch=False),
            "greedy batched": dict(strategy="greedy", batch=True), "beam4 batched": dict(strategy="beam", batch=True)}


def add_engines_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=str(ROOT / "space" / "models" / "en-de"), help="the model of the first rows")
    p.add_argument("--paper", default=str(ROOT / "space" / "models" / "variants" / "paper"),
                   help="a paper-block model for the MarianMTModel row ('' to skip those rows)")
    p.add_argument("--n", type=int, default=200, help="Multi30k val sentences (default 200)")
    p.add_argument("--batch-size", type=int, default=64, help="sentences per batch in the batched columns")
    p.add_argument("--threads", type=int, default=2, help="intra-op threads for every engine (default 2)")
    p.add_argument("--repeats", type=int, default=1, help="rounds; the best time of each cell is kept")
    p.add_argument("--data-dir", type=Path, default=default_data_dir())
    p.add_argument("--out", type=Path, default=None, help="also write the results as JSON")


def ours(model, engine) -> Callable[[List[str], dict, int], List[str]]:
    def run(texts: List[str], setting: dict, batch_size: int) -> List[str]:
        options = dict(strategy=setting["strategy"], beam_size=4, batch_size=batch_size if setting["batch"] else 1)
        return [r.text for r in generate(model, texts, engine=engine, **options)]
    return run


def marian(folder: Path) -> Callable[[List[str], dict, int], List[str]]:
    from transformers import MarianMTModel, MarianTokenizer

    from transformers.utils import logging

    logging.set_verbosity_error()  # one "max_new_tokens and max_length both set" notice per call otherwise
    model, tokenizer = MarianMTModel.from_pretrained(str(folder)).eval(), MarianTokenizer.from_pretrained(str(folder))

    def run(texts: List[str], setting: dict, batch_size: int) -> List[str]:
        size, out = (batch_size if setting["batch"] else 1), []
        beams = 4 if setting["strategy"] == "beam" else 1
        for start in range(0, len(texts), size):
            batch = tokenizer(texts[start:start + size], return_tensors="pt", padding=True)
            with torch.inference_mode():
                ids = model.generate(**batch, num_beams=beams, do_sample=False, length_penalty=0.6,
                                     max_new_tokens=batch["input_ids"].shape[1] + 50)
            out += tokenizer.batch_decode(ids, skip_special_tokens=True)
        return out
    return run


def _rows(args: argparse.Namespace, tmp: Path) -> Dict[str, tuple]:
    """label -> (run function, label of its PyTorch reference row); conversions done here, before timing."""
    model = Transformer.from_pretrained(args.model).eval()
    rows: Dict[str, tuple] = {"pytorch": (ours(model, "pytorch"), "pytorch")}
    for compute_type in ("float32", "int8"):
        engine = CTranslate2Engine(compute_type=compute_type)
        start = time.perf_counter()
        engine.prepare(model)
        print(f"ctranslate2 {compute_type}: converted and loaded in {time.perf_counter() - start:.2f} s")
        rows[f"ctranslate2 {compute_type}"] = (ours(model, engine), "pytorch")
    if args.paper:
        paper = Transformer.from_pretrained(args.paper).eval()
        start = time.perf_counter()
        folder = export_marian(paper, tmp / "paper-marian")
        rows["paper: pytorch"] = (ours(paper, "pytorch"), "paper: pytorch")
        rows["paper: transformers MarianMT"] = (marian(folder), "paper: pytorch")
        print(f"paper block exported to MarianMTModel and loaded in {time.perf_counter() - start:.2f} s")
    return rows


def bench_engines(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    texts = read_lines(corpus_file(args.data_dir, "val", "en"))[: args.n]
    refs = read_lines(corpus_file(args.data_dir, "val", "de"))[: args.n]
    with tempfile.TemporaryDirectory() as tmp:
        rows = _rows(args, Path(tmp))
        for run, _ in rows.values():  # warm-up: first calls allocate, load kernels, build caches
            for setting in SETTINGS.values():
                run(texts[:4], setting, args.batch_size)
        cells: Dict[str, Dict[str, dict]] = {label: {} for label in rows}
        for _ in range(args.repeats):
            for name, setting in SETTINGS.items():
                for label, (run, _) in rows.items():
                    start = time.perf_counter()
                    out = run(texts, setting, args.batch_size)
                    speed = len(texts) / (time.perf_counter() - start)
                    best = cells[label].get(name)
                    if best is None or speed > best["sentences_per_second"]:
                        cells[label][name] = dict(sentences_per_second=speed, outputs=out)
    for label, (_, reference) in rows.items():
        for name, cell in cells[label].items():
            base = cells[reference][name]
            cell["bleu"] = score(cell["outputs"], refs, lowercase=False)["bleu"]
            cell["ratio"] = cell["sentences_per_second"] / base["sentences_per_second"]
            cell["same_as_pytorch"] = sum(a == b for a, b in zip(cell["outputs"], base["outputs"])) / len(texts)
    report = dict(sentences=len(texts), threads=torch.get_num_threads(), batch_size=args.batch_size,
                  rows={label: {name: {k: v for k, v in cell.items() if k != "outputs"} for name, cell in c.items()}
                        for label, c in cells.items()})
    _print(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return report


def _print(report: dict) -> None:
    print(f"\n{report['sentences']} Multi30k val sentences, {report['threads']} threads, batched = "
          f"{report['batch_size']} sentences; sent/s (ratio to the model's PyTorch row), BLEU, same output as PyTorch")
    print(f"{'engine':<30}" + "".join(f"{name:>30}" for name in SETTINGS))
    for label, cells in report["rows"].items():
        line = "".join(f"{c['sentences_per_second']:>9.1f} ({c['ratio']:>4.2f}x) {c['bleu']:>5.2f} "
                       f"{c['same_as_pytorch']:>5.0%}" for c in cells.values())
        print(f"{label:<30}{line}")
