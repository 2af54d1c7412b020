#!/usr/bin/env python
"""The playground's four lessons, and its targets, measured on this machine; results and curves into docs/.

    python -m scripts.playground_lessons [--budget 60] [--out docs/playground] [--only positions,warm-up]
                                         [--skip-translate]

Each lesson trains its runs A and B (``transformer_hub.playground.LESSONS``) one after the other, each in its own
process with one torch thread and ``--budget`` seconds, as the Space's Playground tab does; then *number-to-words*
with the default switches.  Last, the Space (``python app.py``, shipped en-de model) is started and the p50 of
REST ``POST /translate`` (beam 4, the REST routes' decoding; one client) is measured idle and again while a
playground run trains in it.
Writes ``results.json`` (every run's final numbers and curve, the targets and whether each was met) and one
``<lesson>.png`` per lesson (curves of A and B on the same axes, and their attention), and prints the targets.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from space.pictures.playground import RunCurves, attention_figure, curves_figure
from transformer_hub.playground import LESSONS, RunConfig, TrainingProcess

ROOT = Path(__file__).resolve().parent.parent
COMMAND = "python -m scripts.playground_lessons"
TRANSLATE_REQUESTS = 40


def train_one(config: RunConfig, label: str) -> Dict:
    """One run in its own process: its final numbers, its curve and when it first reached 99% exact match."""
    curves = RunCurves(label)
    process = TrainingProcess(config)
    for event in process.events():
        curves.add(event)
    reached = next((e["seconds"] for e in curves.evals if e["exact_match"] >= 0.99), None)
    done = curves.done
    print(f"  {label}: step {done['step']}, {done['seconds']:.0f} s, teacher-forced {done['token_accuracy']:.3f}, "
          f"exact match {done['exact_match']:.3f}" + (f" (99% after {reached:.1f} s)" if reached else ""), flush=True)
    return {"label": label, "config": config.to_dict(), "parameters": curves.parameters, "final": done,
            "seconds_to_99": reached, "curve": {"train": curves.train, "eval": curves.evals},
            "attention": curves.attention, "_curves": curves}


def draw(name: str, title: str, runs: List[Dict], out: Path) -> str:
    curves = [run["_curves"] for run in runs]
    figure = curves_figure(curves, title)
    path = out / f"{name}.png"
    figure.savefig(path)
    attention_figure(curves).savefig(out / f"{name}-attention.png")
    return path.name


def targets(runs: Dict[str, Dict], translate: Optional[Dict]) -> List[Dict]:
    """The playground's targets: (name, measured value, the bound, met)."""
    final = lambda key, field: runs[key]["final"][field] if key in runs else None  # noqa: E731
    rows = [
        ("reverse, sinusoidal: greedy exact match", final("positions/A", "exact_match"), ">=", 0.99),
        ("reverse, no positions: greedy exact match", final("positions/B", "exact_match"), "<=", 0.10),
        ("causal mask off: teacher-forced token accuracy", final("causal-mask/B", "token_accuracy"), ">=", 0.95),
        ("causal mask off: greedy exact match", final("causal-mask/B", "exact_match"), "<=", 0.10),
        ("causal mask on: teacher-forced token accuracy", final("causal-mask/A", "token_accuracy"), ">=", 0.95),
        ("causal mask on: greedy exact match", final("causal-mask/A", "exact_match"), ">=", 0.95),
        ("number-to-words: greedy exact match", final("number-to-words/A", "exact_match"), ">=", 0.95),
    ]
    if translate:
        rows.append(("translate requests failed while a run trained", translate["training"]["errors"], "<=", 0))
    return [{"target": name, "value": value, "bound": f"{op} {bound:g}",
             "met": value is not None and (value >= bound if op == ">=" else value <= bound)}
            for name, value, op, bound in rows if value is not None]


def percent(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def markdown_tables(report: Dict) -> List[str]:
    """The lines of docs/playground.md's tables, from ``results.json`` (its test compares them)."""
    lines = ["| run | steps in budget | teacher-forced token accuracy | greedy exact match | 99% exact match after |",
             "|---|---:|---:|---:|---:|"]
    for key, run in report["runs"].items():
        final, reached = run["final"], run["seconds_to_99"]
        lines.append(f"| {key.split('/')[0]} {run['label']} | {final['step']} | {percent(final['token_accuracy'])} | "
                     f"{percent(final['exact_match'])} | {'-' if reached is None else f'{reached:.1f} s'} |")
    lines += ["", "| target | measured | bound | met |", "|---|---:|---:|---|"]
    for row in report["targets"]:
        value = row["value"] if isinstance(row["value"], int) else percent(row["value"])
        lines.append(f"| {row['target']} | {value} | {row['bound']} | {'yes' if row['met'] else 'no'} |")
    translate = report.get("translate")
    if translate:
        lines += ["", "| REST /translate, beam 4, 1 client | p50 | p95 | errors |", "|---|---:|---:|---:|"]
        for name, key in (("idle", "idle"), ("while a playground run trains", "training")):
            row = translate[key]
            lines.append(f"| {name} | {row['p50_ms']} ms | {row['p95_ms']} ms | {row['errors']} |")
    return lines


def translate_while_training(budget: float) -> Dict:
    """REST /translate p50 (beam 4, one client) on the Space idle, then while a playground run trains in it."""
    from benchmarks.app import app_process, measure_rest
    from gradio_client import Client

    os.environ["SPACE_PLAYGROUND_SECONDS"] = str(int(budget))
    with contextlib.ExitStack() as stack:
        url, _ = stack.enter_context(app_process(None))
        measure_rest(url, "en-de", 1, 4, warmup=0)  # the decoding worker has loaded the model
        idle = measure_rest(url, "en-de", 1, TRANSLATE_REQUESTS)
        client = Client(url, verbose=False)
        job = client.submit("reverse", 0, int(budget), 0.003, False, "sinusoidal", True, 4, "post", True, True, 0.1,
                            "sinusoidal", True, 4, "post", True, True, 0.1, api_name="/playground_train")
        deadline = time.monotonic() + 120
        while not any("training, step" in out[0] for out in job.outputs()):
            if time.monotonic() > deadline or job.done():
                raise RuntimeError(f"the playground run did not start: {job.outputs()[-1:]}")
            time.sleep(0.2)
        training = measure_rest(url, "en-de", 1, TRANSLATE_REQUESTS)
        still = not job.done()
        client.predict(api_name="/playground_stop")
        job.result(timeout=60)
    for row in (idle, training):
        row.pop("outputs", None)
    return {"requests": TRANSLATE_REQUESTS, "idle": idle, "training": training, "run_still_training_at_end": still,
            "ratio_p50": round(training["p50_ms"] / idle["p50_ms"], 2)}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per run (default 60)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "playground")
    parser.add_argument("--only", default="", help="comma-separated lessons (and/or number-to-words)")
    parser.add_argument("--skip-translate", action="store_true", help="do not measure translate p50")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or [*LESSONS, "number-to-words"]
    unknown = sorted(set(names) - set(LESSONS) - {"number-to-words"})
    if unknown or not 0 < args.budget <= 600:
        print(f"playground_lessons: error: unknown lessons {unknown} (known: {', '.join(LESSONS)}, number-to-words)"
              if unknown else "playground_lessons: error: --budget must be in (0, 600]", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    runs: Dict[str, Dict] = {}
    pictures: Dict[str, str] = {}
    for name in names:
        if name == "number-to-words":
            pairs = [("A", RunConfig(task="number-to-words", budget_seconds=args.budget), "default switches")]
            title = "number-to-words, default switches"
        else:
            lesson = LESSONS[name]
            pairs = [("A", lesson.a.replace(budget_seconds=args.budget), lesson.a_label),
                     ("B", lesson.b.replace(budget_seconds=args.budget), lesson.b_label)]
            title = lesson.title
        print(f"{name}:", flush=True)
        done = [train_one(config, f"{letter}: {label}") for letter, config, label in pairs]
        runs.update({f"{name}/{letter}": run for (letter, _, _), run in zip(pairs, done)})
        pictures[name] = draw(name, title, done, args.out)
    translate = None if args.skip_translate else translate_while_training(args.budget)
    for run in runs.values():
        run.pop("_curves")
    report = {"command": COMMAND + (f" --budget {args.budget:g}" if args.budget != 60 else ""),
              "budget_seconds": args.budget, "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                                         "torch_threads_per_run": 1},
              "runs": runs, "pictures": pictures, "translate": translate, "targets": targets(runs, translate)}
    (args.out / "results.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print("\n".join(markdown_tables(report)))
    for row in report["targets"]:
        print(f"{'met ' if row['met'] else 'MISS'} {row['target']}: {row['value']} (target {row['bound']})")
    if translate:
        print(f"translate p50: idle {translate['idle']['p50_ms']} ms, while training {translate['training']['p50_ms']}"
              f" ms ({translate['ratio_p50']}x), errors {translate['training']['errors']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
