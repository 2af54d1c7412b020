#!/usr/bin/env python
"""The table of the finished recipe pilots (``runs/pilots/*/pilot.json``) as Markdown, into docs/multilingual-pilots.md.

    python -m scripts.pilot_table [--pilots runs/pilots] [--out docs/multilingual-pilots.md]

One row per pilot: its change, parameters, updates, epochs and wall minutes (from the final model's card), the
mean over directions of lowercased BLEU, cased BLEU and chrF with the difference to ``baseline``, then the
lowercased BLEU of every direction.  Every number comes from the pilot.json files that
``scripts/pilots_multilingual.py NAME`` wrote.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent


def load_pilots(folder: Path) -> List[Dict]:
    """The pilot.json records under ``folder``, baseline first, then by name."""
    records = [json.loads(path.read_text()) for path in sorted(folder.glob("*/pilot.json"))]
    return sorted(records, key=lambda r: (r["pilot"] != "baseline", r["pilot"]))


def markdown(records: List[Dict]) -> str:
    """The pilots' table (and a line on how they were scored)."""
    if not records:
        return "No finished pilot yet (no runs/pilots/*/pilot.json).\n"
    directions = list(records[0]["directions"])
    base = next((r for r in records if r["pilot"] == "baseline"), None)

    def delta(record: Dict, metric: str) -> str:
        if base is None or record is base:
            return ""
        return f" ({record['mean'][metric] - base['mean'][metric]:+.2f})"

    head = ["pilot", "change", "parameters", "updates", "epochs", "wall min", "BLEU lc (mean)", "BLEU (mean)",
            "chrF (mean)", *[f"{d} BLEU lc" for d in directions]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in records:
        t = r.get("training", {})
        cells = [r["pilot"], r["change"], f"{r['parameters']:,}", str(t.get("updates", "")), str(t.get("epochs", "")),
                 str(t.get("train_wall_minutes", "")),
                 *[f"{r['mean'][m]:.2f}{delta(r, m)}" for m in ("bleu_lowercase", "bleu", "chrf")],
                 *[f"{r['directions'][d]['bleu_lowercase']:.2f}" if d in r["directions"] else "" for d in directions]]
        lines.append("| " + " | ".join(cells) + " |")
    scored = records[0]["scored"]
    note = (f"Scored on the first {scored['sentences_per_direction']} sentences of Multi30k val in each direction, "
            f"{scored['decoding']}, {scored['metrics']} (lc: lowercased); means over the {len(directions)} "
            "directions, in brackets the difference to baseline.")
    return "\n".join(lines) + "\n\n" + note + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pilots", type=Path, default=ROOT / "runs" / "pilots")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "multilingual-pilots.md")
    args = p.parse_args(argv)
    records = load_pilots(args.pilots)
    text = ("# Multilingual recipe pilots\n\nEach pilot is `scripts/train_multilingual.sh` with one change, "
            "trained for the same wall time by `python -m scripts.pilots_multilingual NAME`; this table is written "
            "by `python -m scripts.pilot_table`.\n\n" + markdown(records))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0 if records else 1


if __name__ == "__main__":
    sys.exit(main())
