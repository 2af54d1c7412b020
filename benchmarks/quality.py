"""``python -m benchmarks quality``: the page's time per sentence at quality "best" against "fast", one run.

The page's Translate call (``space.serving.service.translate_view``, with the tab's defaults: model "auto", beam 4, length
penalty 0.6, engine "auto", the word view's alternatives) on its typical input, a few sentences: ``--paragraphs``
paragraphs of three consecutive Multi30k val sentences (the page's examples when the corpus is absent) in each of
``--directions``.  Each paragraph is translated with the "Best quality" box off and on, in interleaved rounds
(``--rounds``; the order of the two alternates), through the Space's own decoding worker (one torch thread, as
deployed), after one warm-up call of each (models loaded).  Reported: the median time per sentence of each mode,
the ratio best / fast of those medians, and whether "best" fits the page's budget: the one-client p50 target of
``benchmarks app``, 150 ms for a one-sentence request, taken per sentence.  ``--out`` writes the JSON that docs/results.md's
statement of the default is checked against (tests/test_quality_numbers.py).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]

from transformer_hub.training.data import corpus_file, default_data_dir, read_lines

PAGE_BUDGET_MS = 150.0  # benchmarks app's target: one client's p50 for a one-sentence /translate
SENTENCES = 3  # per paragraph: "a few sentences"
COMMAND = "nice -n 10 python -m benchmarks quality --out docs/quality_latency.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models-dir", default=str(ROOT / "space" / "models"), help="the Space's models (shipped)")
    p.add_argument("--data-dir", default=str(default_data_dir()))
    p.add_argument("--directions", default="en-de,en-fr,de-en,fr-en", help="comma-separated src-tgt pairs")
    p.add_argument("--paragraphs", type=int, default=5, help="paragraphs of three val sentences per direction")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds (each paragraph once per mode)")
    p.add_argument("--threads", type=int, default=1, help="torch threads of the decoding worker (the Space: 1)")
    p.add_argument("--out", default=None, help="write the results as JSON here")


def paragraphs(data_dir: Path, src: str, n: int) -> List[str]:
    """``n`` paragraphs of ``SENTENCES`` consecutive val sentences in ``src`` (the page's examples without data)."""
    from space.page.examples import EXAMPLES

    try:
        lines = read_lines(corpus_file(data_dir, "val", src))
    except Exception:  # noqa: BLE001 - no corpus here: the page's own examples
        lines = EXAMPLES[src]
    lines = [line.strip() for line in lines if line.strip()]
    return [" ".join(lines[(i * SENTENCES + k) % len(lines)] for k in range(SENTENCES)) for i in range(n)]


def page_call(ctx, text: str, src: str, tgt: str, best: bool) -> Tuple[float, str]:
    """(seconds, model) of the page's Translate with the tab's defaults and the "Best quality" box."""
    from space.serving import service

    start = time.perf_counter()
    data = service.translate_view(ctx, text, "auto", "beam", 4, 0.6, 1.0, 0.9, 0, src, tgt, "auto", best)[3]
    return time.perf_counter() - start, data["model"]


def run(args: argparse.Namespace) -> Dict:
    from space.serving.context import SpaceContext
    from space.serving.decoder import Decoder
    from space.serving.model_store import ModelStore

    store = ModelStore(args.models_dir)
    ctx = SpaceContext(store, decoder=Decoder(store, threads=args.threads))
    work = [(text, *pair.split("-")) for pair in args.directions.split(",")
            for text in paragraphs(Path(args.data_dir), pair.split("-")[0], args.paragraphs)]
    times: Dict[str, List[float]] = {"fast": [], "best": []}
    models: Dict[str, Dict[str, str]] = {"fast": {}, "best": {}}
    try:
        for text, src, tgt in {w[1:]: w for w in work}.values():  # warm-up: every model loaded in the worker
            for best in (False, True):
                page_call(ctx, text, src, tgt, best)
        for r in range(args.rounds):
            for i, (text, src, tgt) in enumerate(work):
                order = ("fast", "best") if (r + i) % 2 == 0 else ("best", "fast")
                for mode in order:
                    seconds, model = page_call(ctx, text, src, tgt, mode == "best")
                    times[mode].append(1000.0 * seconds / SENTENCES)
                    models[mode][f"{src}-{tgt}"] = model
    finally:
        ctx.decoder.close()
    return report(args, times, models, len(work))


def report(args: argparse.Namespace, times: Dict[str, List[float]], models: Dict[str, Dict[str, str]],
           paragraphs_measured: int) -> Dict:
    fast, best = (statistics.median(times[m]) for m in ("fast", "best"))
    result = {
        "command": COMMAND, "directions": args.directions.split(","), "paragraphs": paragraphs_measured,
        "sentences_per_paragraph": SENTENCES, "rounds": args.rounds, "worker_threads": args.threads,
        "models": models, "fast_ms_per_sentence": round(fast, 1), "best_ms_per_sentence": round(best, 1),
        "ratio_best_to_fast": round(best / fast, 2), "page_budget_ms_per_sentence": PAGE_BUDGET_MS,
        "best_fits_page": best <= PAGE_BUDGET_MS, "default": "best" if best <= PAGE_BUDGET_MS else "fast",
        "calls": {m: len(v) for m, v in times.items()},
    }
    print(f"\nthe page's Translate, paragraphs of {SENTENCES} val sentences, {', '.join(result['directions'])}; "
          f"{args.rounds} interleaved rounds, worker threads {args.threads}")
    print("| quality | median ms / sentence | x fast |\n|---|---|---|")
    print(f"| fast (beam 4) | {fast:.1f} | 1.00 |\n| best (reranked) | {best:.1f} | {best / fast:.2f} |")
    print(f"best {'fits' if result['best_fits_page'] else 'does not fit'} the page's {PAGE_BUDGET_MS:.0f} ms per "
          f"sentence: the default is {result['default']}")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result
