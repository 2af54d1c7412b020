"""``python -m benchmarks trace``: what the interactive extras cost, beam 4 with and without them, one run.

The same ``--n`` Multi30k val sentences decoded with beam search (``--beam-size``, default 4) plainly, with
``return_search=True`` (the search trace the Space's beam tree draws) and with ``return_alternatives=5`` (the
word view's alternatives), one sentence at a time and batched (``--batch-size``). The three variants of a cell run
in alternating rounds (``--repeats``), best time kept, so a shared machine's load hits them alike; the ratios are
against the plain run of the same cell.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Dict, List

import torch

from transformer_hub import Transformer
from transformer_hub.training.data import default_data_dir, corpus_file, read_lines
from transformer_hub.decoding import generate

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {"plain": {}, "return_search": {"return_search": True}, "return_alternatives=5": {"return_alternatives": 5}}


def add_trace_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=str(ROOT / "space" / "models" / "en-de"))
    p.add_argument("--data-dir", default=str(default_data_dir()))
    p.add_argument("--n", type=int, default=200, help="Multi30k val sentences (default 200)")
    p.add_argument("--beam-size", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=64, help="sentences per batch in the batched cell")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=None, help="write the results as JSON here")


def _seconds(model: Transformer, sentences: List[str], batch: int, options: dict, languages: dict) -> float:
    start = time.perf_counter()
    if batch == 1:
        for sentence in sentences:
            generate(model, [sentence], strategy="beam", **languages, **options)
    else:
        generate(model, sentences, strategy="beam", batch_size=batch, **languages, **options)
    return time.perf_counter() - start


def bench_trace(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    model = Transformer.from_pretrained(args.model)
    src = model.config.src_lang or "en"
    sentences = read_lines(corpus_file(args.data_dir, "val", src))[: args.n]
    languages = {} if not model.config.multilingual else {"src_lang": src, "tgt_lang": "de"}
    results: Dict[str, Dict[str, float]] = {}
    for cell, batch in (("batch 1", 1), (f"batched ({args.batch_size})", args.batch_size)):
        best = {name: float("inf") for name in VARIANTS}
        for _ in range(args.repeats):
            for name, extra in VARIANTS.items():
                options = {"beam_size": args.beam_size, **extra}
                best[name] = min(best[name], _seconds(model, sentences, batch, options, languages))
        results[cell] = {name: len(sentences) / seconds for name, seconds in best.items()}
    print(f"\nbeam {args.beam_size} on {len(sentences)} val sentences, {args.threads} threads, best of {args.repeats}")
    print("| cell | " + " | ".join(VARIANTS) + " |\n|---|" + "---|" * len(VARIANTS))
    for cell, rates in results.items():
        plain = rates["plain"]
        print(f"| {cell} | " + " | ".join(f"{r:.1f} sent/s ({r / plain:.2f}x)" for r in rates.values()) + " |")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    return results
