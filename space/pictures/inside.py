"""Static pictures of the "Inside the Transformer" tab, in the Space's one style (``plots.py``: matplotlib's
object API); its attention views are interactive (``attention_plots``).

Every function takes the plain data a view returns as JSON (lists, not tensors), so a picture can be
redrawn from that data alone (a new layer, head or step needs no model).  Widths fit the Space's page
(``WIDTH`` inches at 100 dpi); titles sit above the axes and legends beside or below them, never on them.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .labels import piece_label as _label
from .labels import pieces_text as _text

WIDTH = 12.0  # inches: about the width of the Space's page at 100 dpi
CMAP = "viridis"
GREEDY, BEAM, REFERENCE, OTHER = "#d62728", "#3b6fd8", "#2e9e44", "#b8b8b8"


def _figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _fixed(width: float, height: float, left: float, right: float, top: float, bottom: float) -> Figure:
    """A figure with margins in inches, no layout engine: the views redrawn at every slider move are drawn
    once, not measured first (constrained layout renders the figure an extra time)."""
    fig = Figure(figsize=(width, height), dpi=100)
    fig.subplots_adjust(left=left / width, right=1 - right / width, top=1 - top / height, bottom=bottom / height)
    return fig


def _longest(labels: Sequence[str]) -> int:
    return max((len(label) for label in labels), default=1)


def positions_figure(data: Dict[str, Any], mark: Optional[int] = None) -> Figure:
    """Added encodings: the matrix, a few dimensions as curves, the dot products of positions.
    Rotary: the score of a query and a key by distance, and by both positions.  ``mark``: the sentence's length."""
    similarity = data["similarity"]
    if data["kind"] == "rotary":
        fig = _figure(WIDTH, 4.6)
        left, right = fig.subplots(1, 2, width_ratios=[1.4, 1])
        left.plot(range(len(data["by_distance"])), data["by_distance"], color=BEAM, lw=1.8)
        left.set_xlabel("distance between the query's and the key's positions")
        left.set_ylabel("q·k / d_k  (q = k = all ones)")
        left.set_title("Rotary positions: the score falls as the distance grows", fontsize=11)
    else:
        fig = _figure(WIDTH, 8.4)
        top, bottom = fig.subfigures(2, 1)
        matrix, curves = top.subplots(1, 2, width_ratios=[1.2, 1])
        image = matrix.imshow(list(map(list, zip(*data["encoding"]))), cmap="RdBu", vmin=-1, vmax=1,
                              aspect="auto", interpolation="nearest")
        matrix.set_xlabel("position")
        matrix.set_ylabel("dimension")
        matrix.set_title(f"{data['positional']} encoding added to the embeddings", fontsize=11)
        top.colorbar(image, ax=matrix, shrink=0.85)
        for dim, values in data["curves"].items():
            curves.plot(range(len(values)), values, lw=1.5, label=f"dim {dim}")
        curves.set_xlabel("position")
        curves.set_title("A few dimensions over the positions", fontsize=11)
        curves.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
        left, right = bottom.subplots(1, 2, width_ratios=[1.2, 1])
        for p in sorted({0, len(similarity) // 2}):
            left.plot(range(len(similarity)), similarity[p], lw=1.5, label=f"with position {p}")
        left.set_xlabel("position")
        left.set_ylabel("dot product")
        left.set_title("Dot product of one position's vector with the others'", fontsize=11)
        left.legend(loc="upper right", fontsize=8, frameon=False)
    image = right.imshow(similarity, cmap=CMAP, aspect="auto", interpolation="nearest")
    right.set_xlabel("position")
    right.set_ylabel("position")
    right.set_title("Similarity of positions", fontsize=11)
    right.figure.colorbar(image, ax=right, shrink=0.85)
    if mark:
        for ax in (left, right):
            ax.axvline(mark - 1, color=GREEDY, lw=1, ls="--")
        fig.suptitle(f"Dashed red line: the last of your sentence's {mark} source tokens", fontsize=10)
    return fig


def step_figure(data: Dict[str, Any], step: int) -> Figure:
    """Step ``step`` (from 0): greedy's top-k next tokens (its choice in red) and what beam search holds."""
    fig = _figure(WIDTH, 4.4)
    left, right = fig.subplots(1, 2, width_ratios=[1, 1.3])
    top = data["top"][step] if step < len(data["top"]) else []
    labels = [_label(piece) for _, piece, _ in top][::-1]
    left.barh(range(len(top)), [p for _, _, p in top][::-1], color=[OTHER] * (len(top) - 1) + [GREEDY][:len(top)])
    left.set_yticks(range(len(top)), labels, fontsize=10)
    left.set_xlim(0, 1)
    left.set_xlabel("probability of the next token")
    done = " (greedy has finished)" if not top else ""
    left.set_title(f"Greedy, step {step + 1}: the {len(top)} most likely next tokens{done}", fontsize=11)
    for y, (_, _, p) in enumerate(top[::-1]):
        left.text(min(p, 0.85) + 0.01, y, f"{p:.1%}", va="center", fontsize=9)
    beams = data["beams"][step] if step < len(data["beams"]) else {"kept": [], "finished": [], "pruned": []}
    rows = ([(b, BEAM) for b in beams["kept"]] + [(b, REFERENCE) for b in beams["finished"]]
            + [(b, OTHER) for b in beams["pruned"]])
    rows.sort(key=lambda item: -item[0]["score"])
    chances = [math.exp(b["score"]) for b, _ in rows]
    right.barh(range(len(rows))[::-1], chances, color=[c for _, c in rows])
    right.set_xscale("log")
    if chances:
        right.set_xlim(min(chances) / 10, 1.0)
    for y, (b, _) in zip(range(len(rows))[::-1], rows):
        right.text(0.02, y, _text(b["pieces"])[-60:], va="center", fontsize=9, transform=right.get_yaxis_transform())
    right.set_yticks([])
    right.set_xlabel("probability of the words so far (log scale: longer is more likely)")
    right.set_title(f"Beam search (k={data['beam_size']}), step {step + 1}: kept, finished, best pruned", fontsize=11)
    handles = [Patch(color=c, label=name) for c, name in ((BEAM, "kept beam"), (REFERENCE, "finished"),
                                                          (OTHER, "pruned"))]
    right.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, frameon=False, fontsize=9)
    return fig


def forcing_figure(data: Dict[str, Any]) -> Figure:
    """Teacher forcing (the reference's tokens fed in) against free running (greedy's own tokens fed in)."""
    fig = _figure(WIDTH, 4.8)
    ax = fig.add_subplot()
    forced, greedy = data["forced_probs"], data["greedy_probs"]
    ax.plot(range(len(forced)), forced, "o-", color=REFERENCE, label="teacher forcing: p(reference token)")
    ax.plot(range(len(greedy)), greedy, "s--", color=GREEDY, label="free running: p(greedy's token)")
    ax.set_xticks(range(len(forced)), [_label(p) for p in data["reference_pieces"]], rotation=50, ha="right",
                  fontsize=9)
    top = ax.secondary_xaxis("top")  # greedy's tokens above the plot: labels never sit on the points
    top.set_xticks(range(len(data["greedy_pieces"])), [_label(p) for p in data["greedy_pieces"]], rotation=50,
                   ha="left", fontsize=9, color=GREEDY)
    if data["leaves_at"] is not None:
        ax.axvline(data["leaves_at"], color="#444444", ls=":", lw=1.2)
        ax.text(data["leaves_at"] + 0.1, 1.02, "greedy leaves the reference here", fontsize=9, va="bottom")
    ax.set_ylim(-0.08, 1.12)
    ax.set_xlabel("below: the reference's pieces; above, in red: greedy's own")
    ax.set_ylabel("probability")
    ax.set_title("Teacher forcing against free running", fontsize=11)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    return fig


def recipe_figure(data: Dict[str, Any]) -> Figure:
    """The schedule with the logged rate, the training and validation losses, and the smoothed target.

    A panel with nothing to draw is left out and named in one line under the figure instead (a
    large panel reading only "The model card records no label smoothing")."""
    train, val = data["logged"]["train"], data["logged"]["val"]
    smoothing = data.get("smoothing")
    has_schedule = bool(data["lr"]) or bool(train["step"])
    notes = _recipe_notes(data, has_schedule, smoothing)
    fig = _figure(WIDTH, (3.9 if has_schedule or train["step"] or val["step"] else 0.6) + (3.9 if smoothing else 0)
                  + 0.25 * len(notes))
    rows = fig.subfigures(2, 1, height_ratios=[1, 1]) if smoothing else [fig]
    panels = rows[0].subplots(1, 2 if has_schedule else 1, squeeze=False)[0]
    if has_schedule:
        _schedule(panels[0], data, train)
    _losses(panels[-1], train, val, data.get("label_smoothing"))
    if smoothing:
        _smoothing(rows[1].subplots(), smoothing)
    if notes:
        fig.supxlabel("\n".join(notes), fontsize=9, color="#555555")
    return fig


def _recipe_notes(data: Dict[str, Any], has_schedule: bool, smoothing) -> List[str]:
    """One line per thing the model's files do not record: what the left-out panels would have shown."""
    notes = []
    if not data["lr"]:
        what = " or ".join(data.get("missing") or ["schedule"])
        notes.append(f"Its card records no {what}: " + ("the rate shown is the one its trainer logged."
                                                         if has_schedule else "no schedule to draw."))
    if not smoothing:
        notes.append("Its card records no label smoothing: no smoothed target to draw.")
    return notes


def _schedule(ax, data: Dict[str, Any], train: Dict[str, list]) -> None:
    if train["step"]:
        ax.scatter(train["step"], train["lr"], s=14, color=GREEDY, alpha=0.35, label="rate the trainer logged")
    if data["lr"]:
        ax.plot(data["steps"], data["lr"], color=BEAM, lw=1.4, label="schedule (section 5.3)", zorder=3)
        ax.axvline(data["warmup"], color="#444444", ls=":", lw=1)
        ax.set_title(f"d_model={data['d_model']}, warm-up {data['warmup']}, peak {data['peak_lr']:g}", fontsize=11)
    else:
        ax.set_title("The learning rate its trainer logged", fontsize=11)
    ax.set_xlabel("update")
    ax.set_ylabel("learning rate")
    ax.legend(loc="upper right", fontsize=8, frameon=False)


def _losses(ax, train: Dict[str, list], val: Dict[str, list], epsilon: Optional[float]) -> None:
    # "smoothed targets" only when the card records the smoothing the loss was computed against
    label = f"training loss (smoothed targets, ε = {epsilon:g})" if epsilon else "training loss"
    if train["step"]:
        ax.plot(train["step"], train["loss"], color=OTHER, lw=1, label=label)
    if val["step"]:
        ax.plot(val["step"], val["val_loss"], "o-", color=REFERENCE, lw=1.5, label="validation loss")
    if not (train["step"] or val["step"]):
        ax.set_axis_off()
        ax.text(0.5, 0.5, "No metrics.jsonl: no loss curves to draw.", ha="center", va="center", fontsize=10)
        return
    ax.set_xlabel("update")
    ax.set_title("Training and validation loss (metrics.jsonl)", fontsize=11)
    ax.legend(loc="upper right", fontsize=8, frameon=False)


def _smoothing(ax, smoothing: Dict[str, Any]) -> None:
    pieces, model = smoothing["pieces"], smoothing.get("model_probs") or []
    x = list(range(len(pieces)))
    one_hot = [1.0 if i == 0 else 0.0 for i in x]
    smoothed = [smoothing["on_target"] if i == 0 else smoothing["elsewhere"] for i in x]
    width = 0.27
    ax.bar([i - width for i in x], one_hot, width, color=OTHER, label="one-hot target")
    ax.bar(x, smoothed, width, color=BEAM, label=f"label-smoothed target (ε = {smoothing['epsilon']:g})")
    if model:
        ax.bar([i + width for i in x], model, width, color=GREEDY, label="the model's prediction")
    ax.set_xticks(x, [_label(p) for p in pieces], fontsize=10)
    ax.set_ylim(0, 1.15)
    ax.text(0.99, 0.97, f"every other of the {smoothing['vocab_size']:,} tokens gets ε/V = {smoothing['elsewhere']:.2e}",
            transform=ax.transAxes, ha="right", va="top", fontsize=9)
    ax.set_title(f"Label smoothing (section 5.4) at the target token {_label(pieces[0])!r}: "
                 f"{smoothing['on_target']:.4f} on it instead of 1", fontsize=11)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
