"""A picture of beam search: steps left to right, kept beams, pruned candidates (faded), finished hypotheses.

Each node is a (beam, token) candidate labelled with its piece and total log-probability; an edge joins
it to the beam it extends.  The returned hypothesis's path is drawn thick.  Readable for 10-20 steps
and k up to 8: at most k pruned candidates per step are drawn (the best ones).
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

from matplotlib.figure import Figure

from transformer_hub.decoding.results import SearchTrace

from .plots import _quiet_glyph_warnings

KEPT, PRUNED, FINISHED, CHOSEN = "#3b6fd8", "#b8b8b8", "#2e9e44", "#d62728"


def _label(piece: str, score: float) -> str:
    return f"{piece.replace(chr(0x2581), '_')}\n{score:.2f}"


def beam_tree_figure(trace: SearchTrace, pieces: Callable[[Sequence[int]], List[str]],
                     chosen: Optional[Tuple[int, int]], title: str = "") -> Figure:
    steps = trace.steps
    k = max([len(s.beams) for s in steps] + [1])
    rows = 2 * k + 1
    fig = Figure(figsize=(min(40.0, 1.25 * len(steps) + 2.5), max(4.0, 0.55 * rows + 1.5)), dpi=100,
                 layout="constrained")
    ax = fig.add_subplot()
    ax.set_axis_off()
    path_nodes = set()
    if chosen is not None:
        step, index = chosen
        for t, node in enumerate(trace.path(step, steps[step].finished[index])):
            path_nodes.add((t, tuple(node.tokens)))
    beam_y: Dict[int, float] = {}  # previous step: beam index -> y
    ax.scatter([-1], [0], s=120, color="#444444", zorder=3)
    ax.annotate("<s>", (-1, 0), textcoords="offset points", xytext=(0, 9), ha="center", fontsize=8)
    for t, s in enumerate(steps):
        nodes = ([(n, "kept") for n in s.beams] + [(n, "finished") for n in s.finished]
                 + [(n, "pruned") for n in sorted(s.pruned, key=lambda n: -n.score)[:k]])
        nodes.sort(key=lambda item: -item[0].score)
        ys = {}
        for row, (node, kind) in enumerate(nodes):
            y = (len(nodes) - 1) / 2 - row
            parent_y = beam_y.get(node.parent, 0.0) if t else 0.0
            on_path = (t, tuple(node.tokens)) in path_nodes
            colour = CHOSEN if on_path else {"kept": KEPT, "finished": FINISHED, "pruned": PRUNED}[kind]
            alpha = 0.35 if kind == "pruned" and not on_path else 1.0
            ax.plot([t - 1, t], [parent_y, y], color=colour, alpha=alpha, lw=2.5 if on_path else 0.8, zorder=1)
            ax.scatter([t], [y], s=140 if on_path else 60, color=colour, alpha=alpha, zorder=3,
                       marker="s" if kind == "finished" else "o", edgecolors="black" if on_path else "none")
            piece = pieces([node.token])[0] if node.tokens else "?"
            ax.annotate(_label(piece, node.score), (t, y), textcoords="offset points", xytext=(0, 7), ha="center",
                        fontsize=7, alpha=alpha, color="black" if kind != "pruned" else "#666666",
                        fontweight="bold" if on_path else "normal")
            if kind == "kept":
                ys[s.beams.index(node)] = y
        beam_y = ys
    ax.set_xlim(-1.6, len(steps) - 0.4)
    handles = [ax.scatter([], [], color=c, marker=m, label=l) for c, m, l in
               ((KEPT, "o", "kept beam"), (PRUNED, "o", "pruned candidate"), (FINISHED, "s", "finished hypothesis"),
                (CHOSEN, "o", "returned translation's path"))]
    ax.legend(handles=handles, loc="upper left", fontsize=8, frameon=False, ncol=4, bbox_to_anchor=(0, 1.02))
    ax.set_title(title + "\n(steps left to right; labels: piece and total log-probability)", fontsize=10)
    _quiet_glyph_warnings(fig)
    return fig
