#!/usr/bin/env python
"""Per-direction learning curves of a multilingual run, over all its stages, as one picture.

    python -m scripts.learning_curves STAGE1/metrics.jsonl [STAGE2/metrics.jsonl ...] --out MODEL/learning_curves.png

A stage is one training run's ``metrics.jsonl``; a later stage (``train --init-from`` the earlier one's model)
counts its updates on from where the earlier one stopped.  Left: the validation loss of every direction after each
validation; right: greedy validation BLEU, which the trainer scores on a few directions per validation, in turn.
Dashed lines mark where a stage begins.  Prints, per direction, the validation loss at the end of each stage.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent

from transformer_hub.training.metrics import MetricsLog


def joined(stages: List[Path]) -> Tuple[List[Dict], List[int]]:
    """The validation records of every stage with updates counted from the first stage's start, and the starts."""
    records: List[Dict] = []
    starts: List[int] = []
    offset = 0
    for path in stages:
        rows = MetricsLog(path).read()
        if not rows:
            raise SystemExit(f"{path}: no metrics records")
        starts.append(offset)
        records += [{**r, "step": r["step"] + offset} for r in rows if r.get("kind") == "val"]
        offset += max(r["step"] for r in rows)
    return records, starts


def directions(records: List[Dict], prefix: str) -> List[str]:
    return sorted({key[len(prefix):] for r in records for key in r if key.startswith(prefix)})


def plot(records: List[Dict], starts: List[int], out: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_bleu) = plt.subplots(1, 2, figsize=(12, 4.6))
    colours = {d: plt.cm.tab20(i % 20) for i, d in enumerate(directions(records, "val_loss/"))}
    for d, colour in colours.items():
        seen = [r for r in records if f"val_loss/{d}" in r]
        ax_loss.plot([r["step"] for r in seen], [r[f"val_loss/{d}"] for r in seen], "-", lw=1.2, color=colour, label=d)
        scored = [r for r in records if f"bleu/{d}" in r]
        ax_bleu.plot([r["step"] for r in scored], [r[f"bleu/{d}"] for r in scored], "o-", ms=3.5, lw=0.8,
                     color=colour, label=d)
    for ax in (ax_loss, ax_bleu):
        for start in starts[1:]:
            ax.axvline(start, ls="--", color="grey", lw=0.8)
        ax.grid(alpha=0.3)
        ax.set_xlabel("update (all stages)")
    ax_loss.set(ylabel="label-smoothed cross-entropy", title=f"{title}: validation loss per direction")
    ax_bleu.set(ylabel="sacreBLEU (greedy, val)", title="validation BLEU per direction (a few per validation)")
    ax_loss.legend(ncol=3, fontsize=7, loc="upper right")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def stage_ends(records: List[Dict], starts: List[int]) -> List[Dict[str, float]]:
    """Per stage, the validation loss of every direction at its last validation."""
    ends = []
    for i, start in enumerate(starts):
        stop = starts[i + 1] if i + 1 < len(starts) else float("inf")
        inside = [r for r in records if start < r["step"] <= stop]
        last = inside[-1] if inside else {}
        ends.append({k[len("val_loss/"):]: round(v, 3) for k, v in last.items() if k.startswith("val_loss/")})
    return ends


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("stages", nargs="+", type=Path, help="metrics.jsonl of each stage, in order")
    p.add_argument("--out", type=Path, required=True, help="the picture (PNG)")
    p.add_argument("--title", default="multilingual")
    args = p.parse_args(argv)
    missing = [str(path) for path in args.stages if not path.is_file()]
    if missing:
        print(f"no such metrics file: {', '.join(missing)}", file=sys.stderr)
        return 2
    records, starts = joined(args.stages)
    print(f"wrote {plot(records, starts, args.out, args.title)}")
    for path, end in zip(args.stages, stage_ends(records, starts)):
        print(json.dumps({"stage": str(path), "val_loss": end}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
