"""The playground's pictures: learning curves of A and B on the same axes, and their attention snapshots.

``RunCurves`` collects one run's events; the figures use matplotlib's object API (no pyplot), like the
rest of the Space, so they are safe in Gradio's worker threads.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from matplotlib.figure import Figure

from .labels import token_label

COLOURS = ("#1f77b4", "#d62728")  # A, B
STYLES = ("-", "--")


@dataclass
class RunCurves:
    """What one run has reported so far."""

    label: str
    train: List[Dict] = field(default_factory=list)  # step, loss, token_accuracy, lr
    evals: List[Dict] = field(default_factory=list)  # step, token_accuracy, exact_match
    attention: Optional[Dict] = None
    done: Optional[Dict] = None
    parameters: Optional[int] = None
    trained_steps: Optional[int] = None  # a trained model's attention on new input: the steps it trained

    def add(self, event) -> None:
        if event.kind == "train":
            self.train.append(dict(step=event.step, loss=event.loss, token_accuracy=event.token_accuracy, lr=event.lr))
        elif event.kind == "eval":
            self.evals.append(dict(step=event.step, seconds=round(event.seconds, 2),
                                   token_accuracy=event.token_accuracy, exact_match=event.exact_match))
        elif event.kind == "done":
            self.done = dict(reason=event.reason, step=event.step, seconds=round(event.seconds, 2),
                             token_accuracy=event.token_accuracy, exact_match=event.exact_match)
        if event.kind == "start":
            self.parameters = event.parameters
        if event.attention is not None:
            self.attention = event.attention

    def summary(self) -> Dict:
        last = self.evals[-1] if self.evals else {}
        return {"label": self.label, "parameters": self.parameters, "steps": (self.train or [{}])[-1].get("step", 0),
                "held_out_token_accuracy": last.get("token_accuracy"), "exact_match": last.get("exact_match"),
                "finished": self.done, "curve": {"train": self.train, "eval": self.evals}}


def curves_figure(runs: Sequence[RunCurves], title: str = "") -> Figure:
    """Loss, teacher-forced token accuracy and greedy exact match against the step, every run on the same axes.

    The picture carries its own title ("Learning curves: ..."): the page shows it without a panel label, which
    would cover the left subplot's title."""
    fig = Figure(figsize=(11, 3.6), dpi=90, layout="constrained")
    loss, tokens, exact = fig.subplots(1, 3)
    for i, run in enumerate(runs):
        style = dict(color=COLOURS[i % 2], linestyle=STYLES[i % 2])
        steps = [p["step"] for p in run.train]
        loss.plot(steps, [p["loss"] for p in run.train], label=run.label, **style)
        tokens.plot(steps, [p["token_accuracy"] for p in run.train], alpha=0.45, **style)
        e_steps = [p["step"] for p in run.evals]
        tokens.plot(e_steps, [p["token_accuracy"] for p in run.evals], marker="o", markersize=3,
                    label=f"{run.label} (held-out)", **style)
        exact.plot(e_steps, [p["exact_match"] for p in run.evals], marker="o", markersize=3, label=run.label, **style)
    loss.set_title("training loss (label-smoothed)", fontsize=10)
    tokens.set_title("teacher-forced token accuracy", fontsize=10)
    exact.set_title("greedy exact match (held-out)", fontsize=10)
    for ax in (tokens, exact):
        ax.set_ylim(-0.02, 1.02)
    for ax in (loss, tokens, exact):
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    if runs and any(run.train for run in runs):
        loss.legend(fontsize=8)
    fig.suptitle(f"Learning curves: {title}" if title else "Learning curves", fontsize=11)
    return fig


def _heatmap(fig: Figure, ax, matrix: Sequence[Sequence[float]], columns: List[str], rows: List[str],
             title: str) -> None:
    image = ax.imshow(matrix, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
    columns, rows = [token_label(t) for t in columns], [token_label(t) for t in rows]
    ax.set_xticks(range(len(columns)), columns, fontsize=8, rotation=90 if max(map(len, columns)) > 2 else 0)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_title(title, fontsize=9)
    return image


def attention_figure(runs: Sequence[RunCurves], title: str = "Attention on a fixed held-out example") -> Figure:
    """Per run: cross-attention (output rows x source columns) and decoder self-attention, averaged over layers
    and heads, on the run's fixed held-out example (or a visitor's input: ``trained_steps`` set); ``title`` on top,
    as the page shows the picture without a panel label."""
    shown = [run for run in runs if run.attention]
    fig = Figure(figsize=(9, 0.4 + 3.4 * max(1, len(shown))), dpi=90, layout="constrained")
    fig.suptitle(title, fontsize=11)
    axes = fig.subplots(max(1, len(shown)), 2, squeeze=False)
    image = None
    for row, run in zip(axes, shown):
        picture = run.attention
        cross, self_attention = _mean(picture["cross"]), _mean(picture["self"])
        if run.trained_steps is not None:
            when = f"trained {run.trained_steps} steps"
        else:
            when = f"step {(run.evals or [{'step': 0}])[-1]['step']}"
        # row i is the decoder reading target[i] and predicting the next output token
        image = _heatmap(fig, row[0], cross, picture["source"], picture["target"],
                         f"{run.label}: cross-attention ({when})")
        _heatmap(fig, row[1], self_attention, picture["target"], picture["target"],
                 f"{run.label}: decoder self-attention")
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.7, label="attention weight")
    return fig


def _mean(layers: Sequence[Sequence[Sequence[float]]]) -> List[List[float]]:
    count = len(layers)
    return [[sum(layer[r][c] for layer in layers) / count for c in range(len(layers[0][0]))]
            for r in range(len(layers[0]))]
