"""Beam search against the quality mode (the tuned reranker) on the test sets, with the time each takes.

    python -m scripts.rerank_results --model space/models/multilingual --workers 2

For every test split and direction the model serves (where Multi30k has both files): beam 5 and
``quality="best"`` (``transformer_hub.rerank.Reranker`` with the model's ``rerank.json``) on the same sentences
in the same process, one after the other, each timed; sacreBLEU cased and lowercased (13a) and chrF. Writes
``<model>/rerank_results.json`` (the library's results schema: models ``beam 5`` and ``quality best``; the
settings keep the seconds of each per direction, their ratio, and the features each direction's weights use) and
prints a Markdown table with the targets of ``multilingual_results.py`` (the pivots read from ``--pivots``).
A model trained with domain tags reads these captions in its default domain (the first of ``config.domains``);
``scripts.domain_results --quality fast,best`` scores both modes on each domain's test set with its tag.
"""
from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from tqdm.auto import tqdm

from transformer_hub import Transformer
from transformer_hub.hub import results as results_json
from transformer_hub.training.data import default_data_dir
from transformer_hub.hub import save_card
from transformer_hub.training.metrics import score
from transformer_hub.rerank import RERANK_FILE, Reranker, RerankFile

from scripts.multilingual_results import PIVOT_MARGIN, SPLITS, TARGETS, rounded, split_lines
from scripts.tune_rerank import process_pool

BEAM, BEST = "beam 5", "quality best"
_RERANKERS: Dict[str, Reranker] = {}


def _reranker(folder: Path) -> Reranker:
    if str(folder) not in _RERANKERS:
        _RERANKERS[str(folder)] = Reranker.from_pretrained(folder)
    return _RERANKERS[str(folder)]


def score_job(job: Tuple[argparse.Namespace, str, str, str]) -> Optional[Dict]:
    """One split and direction: both modes on the same sentences, timed; runs in a worker process."""
    args, split, src, tgt = job
    import torch

    torch.set_num_threads(1)
    sources, references = split_lines(args.data_dir, split, src), split_lines(args.data_dir, split, tgt)
    if sources is None or references is None:
        return None
    sources, references = sources[: args.limit or None], references[: args.limit or None]
    reranker = _reranker(args.model)
    row = {"split": split, "direction": f"{src}-{tgt}", "sentences": len(sources), "seconds": {}}
    start = time.perf_counter()
    beam = reranker.model.translate(sources, strategy="beam", beam_size=5, batch_size=64, src_lang=src,
                     tgt_lang=tgt)
    row["seconds"][BEAM] = time.perf_counter() - start
    start = time.perf_counter()
    best = reranker.translate(sources, src, tgt)
    row["seconds"][BEST] = time.perf_counter() - start
    row[BEAM], row[BEST] = rounded(score(beam, references)), rounded(score(best, references))
    row["features"] = reranker.direction(src, tgt).used()
    return row


def evaluate(args: argparse.Namespace) -> List[Dict]:
    tuned = RerankFile.load(args.model / RERANK_FILE).directions
    pairs = [(s, t) for s, t in Transformer.from_pretrained(args.model).config.pairs() if f"{s}-{t}" in tuned]
    jobs = [(args, split, s, t) for split in args.splits for s, t in pairs]
    rows = []
    with process_pool(args.workers) as pool:
        for row in tqdm(pool.imap_unordered(score_job, jobs), total=len(jobs), desc="test sets", unit="set"):
            if row is not None:
                rows.append(row)
    order = [f"{s}-{t}" for s, t in pairs]
    return sorted(rows, key=lambda r: (args.splits.index(r["split"]), order.index(r["direction"])))


def pivot_targets(path: Optional[Path]) -> Dict[str, float]:
    """Lowercased test_2016_flickr targets: the fixed ones, and pivot via en + margin from the beam results."""
    targets = dict(TARGETS)
    if path is not None and path.is_file():
        for s in results_json.load(path).results:
            if s.model == "multilingual via en" and s.split == "test_2016_flickr" and s.metric == "bleu_lowercase":
                targets[s.direction] = round(s.value + PIVOT_MARGIN, 2)
    return targets


def as_results(rows: List[Dict], args: argparse.Namespace, out: Path, command: str) -> results_json.Results:
    path = results_json.relative_path(args.model, out.parent)
    totals = {mode: sum(r["seconds"][mode] for r in rows) for mode in (BEAM, BEST)}
    sentences = sum(r["sentences"] for r in rows)
    models = [results_json.ModelResult(name=mode, path=path, decoding={
        "sentences": sentences, "seconds": round(totals[mode], 1),
        "seconds_per_sentence": round(totals[mode] / sentences, 5)}) for mode in (BEAM, BEST)]
    scores = [results_json.Score(model=mode, split=r["split"], metric=metric, value=value, direction=r["direction"])
              for r in rows for mode in (BEAM, BEST) for metric, value in r[mode].items()]
    settings = {"command": command, "time_ratio": round(totals[BEST] / totals[BEAM], 2),
                "features": {r["direction"]: r["features"] for r in rows if r["split"] == SPLITS[0]},
                "seconds": {f"{r['split']} {r['direction']}": {m: round(r["seconds"][m], 2) for m in (BEAM, BEST)}
                            for r in rows}}
    return results_json.Results(models=models, results=scores, settings=settings)


def markdown(saved: results_json.Results, targets: Dict[str, float]) -> str:
    """One line per split and direction: both modes' scores, the target and the gap, the features used."""
    cell = {(s.model, s.split, s.direction, s.metric): s.value for s in saved.results}
    keys = list(dict.fromkeys((s.split, s.direction) for s in saved.results))
    lines = ["| split | direction | beam 5 BLEU | BLEU (lc) | chrF | best BLEU | BLEU (lc) | chrF | target (lc) "
             "| gap | features |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for split, direction in keys:
        b = [cell[BEAM, split, direction, m] for m in ("bleu", "bleu_lowercase", "chrf")]
        q = [cell[BEST, split, direction, m] for m in ("bleu", "bleu_lowercase", "chrf")]
        target = targets.get(direction) if split == SPLITS[0] else None
        gap = f"{q[1] - target:+.2f}" if target is not None else ""
        features = ", ".join(saved.settings["features"].get(direction, [])) if split == SPLITS[0] else ""
        lines.append(f"| {split} | {direction} | " + " | ".join(f"{v:.2f}" for v in b + q)
                     + f" | {'' if target is None else f'{target:.2f}'} | {gap} | {features} |")
    return "\n".join(lines)


def write_card(model_dir: Path, saved: results_json.Results) -> None:
    """Name the quality mode, its weights file and these results in the model's card (weights untouched)."""
    tuned = RerankFile.load(model_dir / RERANK_FILE)
    cell = {(s.model, s.direction): s.value for s in saved.results
            if s.split == SPLITS[0] and s.metric == "bleu_lowercase"}
    directions = list(dict.fromkeys(d for _, d in cell))
    gains = ", ".join(f"{d} {cell[BEAM, d]:.2f} → {cell[BEST, d]:.2f}" for d in directions)
    model = Transformer.from_pretrained(model_dir)
    model.card_data["quality"] = (
        f'`Reranker.from_pretrained(folder).translate(texts, src, tgt, quality="best")` (command line: `translate '
        f'--quality best`) reranks beam search\'s n-best with the weights in `{RERANK_FILE}` (per direction: the '
        f"features, their weights and the forward score's length penalty), tuned on val by `{tuned.command}` "
        f"({tuned.data}). Lowercased BLEU on {SPLITS[0]}, beam 5 → quality best: {gains}; it takes "
        f"{saved.settings['time_ratio']:.2f}x beam 5's time per sentence. From `{saved.settings['command']}`, "
        "which writes rerank_results.json.")
    save_card(model, model_dir)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, required=True, help="a model folder with rerank.json")
    p.add_argument("--data-dir", type=Path, default=default_data_dir())
    p.add_argument("--splits", type=lambda s: s.split(","), default=list(SPLITS))
    p.add_argument("--pivots", type=Path, default=None,
                   help="results of multilingual_results.py (default: <model>/multilingual_results.json)")
    p.add_argument("--workers", type=int, default=1, help="test sets scored at once, one process each")
    p.add_argument("--limit", type=int, default=0, help="only the first N sentences of each set (0 = all)")
    p.add_argument("--out", type=Path, default=None, help="default: <model>/rerank_results.json")
    p.add_argument("--card", action="store_true", help="also name the quality mode and these results in the card")
    args = p.parse_args(argv)
    if not args.data_dir.is_dir():
        print(f"no Multi30k at {args.data_dir}: pass --data-dir", file=sys.stderr)
        return 2
    out = args.out or args.model / "rerank_results.json"
    command = shlex.join(["python", "-m", "scripts.rerank_results", *(argv if argv is not None else sys.argv[1:])])
    saved = as_results(evaluate(args), args, out, command)
    results_json.save(saved, out)
    print(markdown(saved, pivot_targets(args.pivots or args.model / "multilingual_results.json")))
    print(f"time per sentence, quality best / beam 5: {saved.settings['time_ratio']:.2f}x")
    if args.card:
        write_card(args.model, saved)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
