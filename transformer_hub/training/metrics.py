"""Scores (sacreBLEU, chrF), the JSONL metrics log, and the training-curve plot."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple


def _metrics(lowercase: bool) -> Dict[str, Any]:
    """The sacreBLEU objects behind ``score``: cased BLEU (13a tokenization), chrF, lowercased BLEU if asked."""
    from sacrebleu.metrics import BLEU, CHRF

    found: Dict[str, Any] = {"bleu": BLEU()}
    if lowercase:
        found["bleu_lowercase"] = BLEU(lowercase=True)
    found["chrf"] = CHRF()
    return found


def score(hypotheses: Sequence[str], references: Sequence[str], lowercase: bool = True) -> Dict[str, float]:
    """Corpus-level sacreBLEU (cased), chrF and, with ``lowercase``, lowercased BLEU (as some papers report)."""
    return score_with_signatures(hypotheses, references, lowercase)[0]


def score_with_signatures(hypotheses: Sequence[str], references: Sequence[str], lowercase: bool = True
                          ) -> Tuple[Dict[str, float], Dict[str, str]]:
    """``score`` and, under the same keys, sacreBLEU's signature of each (what makes a score reproducible)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    refs, metrics = [list(references)], _metrics(lowercase)
    scores = {name: metric.corpus_score(list(hypotheses), refs).score for name, metric in metrics.items()}
    return scores, {name: str(metric.get_signature()) for name, metric in metrics.items()}


class MetricsLog:
    """Append-only JSON lines: one object per event (``{"kind": "train" | "val" | ..., ...}``)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def append(self, **record: Any) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")

    def read(self) -> List[Dict[str, Any]]:
        if not self.path.is_file():
            return []
        records = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a crash mid-write
        return records

    def truncate_after(self, step: int) -> None:
        """Drop records past ``step`` (a resumed run repeats them)."""
        kept = [r for r in self.read() if r.get("step", 0) <= step]
        self.path.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")


def plot_curves(records: List[Dict[str, Any]], path: Path, title: str = "training") -> Path:
    """Two panels: train/val loss and val BLEU against updates. Returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [r for r in records if r.get("kind") == "train"]
    val = [r for r in records if r.get("kind") == "val"]
    fig, (ax_loss, ax_bleu) = plt.subplots(1, 2, figsize=(10, 3.8))
    if train:
        ax_loss.plot([r["step"] for r in train], [r["loss"] for r in train], lw=0.8, alpha=0.7, label="train loss")
    if val:
        ax_loss.plot([r["step"] for r in val], [r["val_loss"] for r in val], "o-", ms=3, label="val loss")
        scored = [r for r in val if "bleu" in r]
        ax_bleu.plot([r["step"] for r in scored], [r["bleu"] for r in scored], "o-", ms=3, color="C2", label="val BLEU")
    ax_loss.set(xlabel="update", ylabel="label-smoothed cross-entropy", title=f"{title}: loss")
    ax_bleu.set(xlabel="update", ylabel="sacreBLEU (greedy)", title=f"{title}: validation BLEU")
    for ax in (ax_loss, ax_bleu):
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_adaptation(curves: Dict[str, List[Dict[str, Any]]], table: List[List[str]], path: Path,
                    title: str = "adapt") -> Path:
    """Each direction's held-out BLEU against updates (update 0: the base model's, also its dashed line) beside
    the before/after table (rows: what was scored, BLEU and chrF before and after). Returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_curve, ax_table) = plt.subplots(1, 2, figsize=(11, 3.8 + 0.2 * max(0, len(table) - 6)),
                                             gridspec_kw={"width_ratios": [1.1, 1]})
    for k, (direction, curve) in enumerate(curves.items()):
        ax_curve.plot([p["step"] for p in curve], [p["bleu"] for p in curve], "o-", ms=3, color=f"C{k + 2}",
                      label=f"{direction} held-out BLEU (greedy)")
        ax_curve.axhline(curve[0]["bleu"], ls="--", lw=0.8, color=f"C{k + 2}", alpha=0.6)
    ax_curve.set(xlabel="update", ylabel="sacreBLEU", title=f"{title}: held-out pairs (dashed: the base model)")
    ax_curve.grid(alpha=0.3)
    ax_curve.legend(loc="best", fontsize=8)
    ax_table.axis("off")
    cells = ax_table.table(cellText=table, colLabels=["scored on", "BLEU before", "BLEU after", "chrF before",
                                                      "chrF after"], colWidths=[0.36] + [0.16] * 4, loc="center")
    cells.auto_set_font_size(False)
    cells.set_fontsize(8)
    cells.scale(1, 1.4)
    ax_table.set_title("before and after")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
