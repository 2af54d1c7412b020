#!/usr/bin/env python
"""The v3 pilots: one change each to ``scripts/train_multilingual_v3.sh``, the same number of updates, scored on
both domains' val.

    MULTI30K=DIR LIBREOFFICE_HELP=DIR python -m scripts.pilots_v3 NAME [extra train options]
    python -m scripts.pilots_v3 --list                  # the pilots and their changes
    python -m scripts.pilots_v3 --table                 # docs/multilingual-v3-pilots.md from the pilot.json files

A pilot runs the recipe's options (read from the script), minus the ones its change drops, plus its own, plus
``PILOT_OPTIONS`` and ``--max-updates $PILOT_UPDATES`` (default 120: equal compute is equal updates of the same
``--max-tokens``), into ``runs/pilots-v3/NAME`` with ``--resume`` (rerun to continue).  ``THREADS``: torch's threads
(default 2).  Its final model then translates the first ``PILOT_SENTENCES`` (100) val sentences of every direction
of each corpus (``PILOT_BEAM``, default 1: greedy), with that corpus's domain tag when the model has tags, scored
by sacreBLEU and chrF into ``runs/pilots-v3/NAME/pilot.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

from .pilots_multilingual import ROOT, recipe_options, score_model

RECIPE = ROOT / "scripts" / "train_multilingual_v3.sh"
PILOTS_DIR = Path("runs") / "pilots-v3"
TABLE = ROOT / "docs" / "multilingual-v3-pilots.md"
V2_ARCHITECTURE = ["--vocab-size", "16000", "--d-model", "160", "--n-heads", "4", "--d-ff", "640",
                   "--n-encoder-layers", "4", "--n-decoder-layers", "4", "--dropout", "0.2", "--norm", "pre",
                   "--positional", "rope", "--feed-forward", "swiglu", "--peak-lr", "0.004"]
# name: (what changes against the recipe, options dropped with their value, options added)
PILOTS: Dict[str, tuple] = {
    "tagged": ("the recipe: v2's weights and tokenizer, both corpora, a domain tag on every source", [], []),
    "untagged": ("the same without domain tags (mixed data only)", [], ["--no-domain-tags"]),
    "joint-fresh": ("a fresh start: a new joint 16k tokenizer trained on both corpora, v2's sizes, tagged",
                    ["--init-from"], V2_ARCHITECTURE),
}
PILOT_OPTIONS = ["--warmup", "50", "--save-every", "40", "--average-last", "2", "--valid-every", "0"]


def train_options(name: str, updates: int, extra: List[str]) -> List[str]:
    """Every option of the pilot's run: the recipe without the dropped options, then the pilot's, then ours."""
    options, (_, drop, add) = recipe_options(RECIPE), PILOTS[name]
    for option in drop:
        at = options.index(option)
        del options[at: at + 2]
    return ["--out", str(PILOTS_DIR / name), *options, *add, *PILOT_OPTIONS, "--max-updates", str(updates),
            "--name", f"transformer_hub v3 pilot {name}", *extra, "--resume"]


def corpora(options: List[str]) -> Dict[str, Path]:
    """{corpus name: folder} of the run's --data-dir NAME=PATH options."""
    found = [options[i + 1] for i, word in enumerate(options[:-1]) if word == "--data-dir"]
    return {value.split("=", 1)[0]: Path(value.split("=", 1)[1]) for value in found}


def run_pilot(name: str, extra: List[str]) -> int:
    from transformer_hub import Transformer

    updates = int(os.environ.get("PILOT_UPDATES", "120"))
    options = train_options(name, updates, extra)
    print("python -m transformer_hub train " + shlex.join(options), flush=True)
    command = f"PILOT_UPDATES={updates} python -m scripts.pilots_v3 {shlex.join([name, *extra])}"  # no local paths
    status = subprocess.call([sys.executable, "-m", "transformer_hub", "train", *options])
    final = PILOTS_DIR / name / "final"
    if status != 0 or not (final / "model.safetensors").is_file():
        print(f"{name}: training stopped before a final model (status {status}); rerun to continue", file=sys.stderr)
        return status or 1
    model = Transformer.from_pretrained(final)
    sentences, beam = int(os.environ.get("PILOT_SENTENCES", "100")), int(os.environ.get("PILOT_BEAM", "1"))
    started, scores = time.time(), {}
    for corpus, folder in corpora(options).items():
        scores[corpus] = score_model(model, folder, sentences, beam, domain=corpus)
    record = {"pilot": name, "change": PILOTS[name][0], "command": command, "parameters": model.num_parameters(),
              "training": model.card_data.get("training", {}), "scoring_minutes": round((time.time() - started) / 60, 1),
              "scored": {"split": "val", "sentences_per_direction": sentences,
                         "decoding": f"beam {beam}" if beam > 1 else "greedy", "metrics": "sacreBLEU 13a, chrF"},
              "mean": {corpus: {m: round(sum(r[m] for r in rows.values()) / len(rows), 2)
                                for m in ("bleu", "bleu_lowercase", "chrf")} for corpus, rows in scores.items()},
              "directions": scores}
    out = PILOTS_DIR / name / "pilot.json"
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["mean"]), f"-> {out}")
    return 0


def table(records: List[Dict]) -> str:
    """The pilots' Markdown table: per corpus, the mean BLEU and chrF over directions, then the en-x BLEU."""
    if not records:
        return "No finished v3 pilot yet (no runs/pilots-v3/*/pilot.json).\n"
    names = list(records[0]["mean"])
    head = ["pilot", "change", "parameters", "updates", "wall min",
            *[f"{c} {m}" for c in names for m in ("BLEU", "chrF")],
            *[f"{c} {d}" for c in names for d in ("en-de", "en-fr", "en-cs", "de-en")]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in records:
        t = r["training"]
        cells = [r["pilot"], r["change"], f"{r['parameters']:,}", str(t.get("updates", "")),
                 str(t.get("train_wall_minutes", "")),
                 *[f"{r['mean'][c][m]:.2f}" for c in names for m in ("bleu", "chrf")],
                 *[f"{r['directions'][c][d]['bleu']:.2f}" for c in names for d in ("en-de", "en-fr", "en-cs", "de-en")]]
        lines.append("| " + " | ".join(cells) + " |")
    s = records[0]["scored"]
    return ("# v3 pilots: domain tags, warm start, tokenizer\n\n"
            "Each pilot is `scripts/train_multilingual_v3.sh` with one change, trained for the same number of "
            "updates by `python -m scripts.pilots_v3 NAME`; this page is written by `python -m scripts.pilots_v3 "
            "--table` from the runs' pilot.json files (`docs/multilingual-v3-pilots.json`).\n\n"
            + "\n".join(lines) + "\n\n"
            f"Scored on the first {s['sentences_per_direction']} val sentences of each of the 12 directions of "
            f"each corpus (captions: Multi30k; software: LibreOffice's help), {s['decoding']}, cased "
            f"{s['metrics']}; means over the 12 directions. Compute is counted in updates of the same tokens per batch; "
            "the wall minutes also hold whatever else the machine ran at the time.\n")


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("name", nargs="?", help="the pilot: " + ", ".join(PILOTS))
    p.add_argument("--list", action="store_true", help="print the pilots and their changes")
    p.add_argument("--table", action="store_true", help="write the table of the finished pilots")
    args, extra = p.parse_known_args(argv)
    os.chdir(ROOT)
    if args.table:
        records = [json.loads(f.read_text()) for f in sorted(PILOTS_DIR.glob("*/pilot.json"))]
        records.sort(key=lambda r: list(PILOTS).index(r["pilot"]) if r["pilot"] in PILOTS else len(PILOTS))
        (ROOT / "docs" / "multilingual-v3-pilots.json").write_text(json.dumps(records, indent=1) + "\n")
        TABLE.write_text(table(records))
        print(f"{len(records)} pilot(s) -> {TABLE.relative_to(ROOT)}")
        return 0
    if args.list or not args.name:
        print("\n".join(f"{name:12} {change}" for name, (change, _, _) in PILOTS.items()))
        return 0 if args.list else 2
    if args.name not in PILOTS:
        print(f"unknown pilot {args.name!r}; pilots: {', '.join(PILOTS)}", file=sys.stderr)
        return 2
    return run_pilot(args.name, extra)


if __name__ == "__main__":
    raise SystemExit(main())
