"""A picture of beam search: steps top to bottom, the kept beams, the best pruned candidates, finished hypotheses.

Each node is a (beam, token) candidate labelled with its piece and total log-probability; an edge joins it
to the beam it extends; the returned hypothesis's path is drawn thick and red.  Steps run down the page, so
the picture keeps the Space's width whatever the sentence's length, and a step holds at most k kept beams,
the candidates that finished there and the ``PRUNED_SHOWN`` best pruned ones.  Drawing time is bounded:
at most ``MAX_NODES`` nodes are drawn, whatever the beam size and the length (a long search loses its pruned
candidates first, then its last steps; the picture says so).
"""
from __future__ import annotations

import textwrap
from typing import Callable, List, Optional, Sequence, Tuple

from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from transformer_hub.decoding.results import SearchTrace

from .labels import piece_label

KEPT, PRUNED, FINISHED, CHOSEN = "#3b6fd8", "#b8b8b8", "#2e9e44", "#d62728"
PRUNED_SHOWN = 2  # best pruned candidates drawn per step
MAX_NODES = 400  # nodes drawn in all: bounds the drawing time of a long sentence at a large beam
WIDTH = 12.0  # inches: the Space's page
LABEL_PT = 8.5  # points: 11.8 px at the figure's 100 dpi, the smallest text drawn (readable: >= 11 px)
ROW = 0.4  # inches per step: two lines of LABEL_PT text


def _label(piece: str, score: float) -> str:
    return f"{piece_label(piece)}\n{score:.2f}"


def _rows(trace: SearchTrace, k: int, pruned: int = PRUNED_SHOWN):
    """Per step, its drawn nodes (node, kind) best first, within ``MAX_NODES`` in all: a long search loses its
    pruned candidates first, then its last steps."""
    rows, total = [], 0
    for s in trace.steps:
        nodes = ([(n, "kept") for n in s.beams] + [(n, "finished") for n in s.finished[:k]]
                 + [(n, "pruned") for n in sorted(s.pruned, key=lambda n: -n.score)[:pruned]])
        nodes.sort(key=lambda item: -item[0].score)
        if rows and total + len(nodes) > MAX_NODES:
            return _rows(trace, k, 0) if pruned else rows
        rows.append(nodes)
        total += len(nodes)
    return rows


def beam_tree_figure(trace: SearchTrace, pieces: Callable[[Sequence[int]], List[str]],
                     chosen: Optional[Tuple[int, int]], title: str = "") -> Figure:
    steps = trace.steps
    k = max([len(s.beams) for s in steps] + [1])
    rows = _rows(trace, k)
    columns = max([len(r) for r in rows] + [1])
    height = ROW * len(rows) + 1.5
    width = min(WIDTH, 1.25 * columns + 1.2)  # as wide as the candidates of a step need
    fig = Figure(figsize=(width, height), dpi=100)  # fixed margins: a layout engine would draw it twice
    ax = fig.add_axes((0.3 / width, 0.45 / height, 1 - 0.4 / width, 1 - 1.35 / height))
    ax.set_axis_off()
    on_path = set()
    if chosen is not None:
        on_path = {(t, tuple(n.tokens)) for t, n in enumerate(trace.path(chosen[0], steps[chosen[0]].finished[chosen[1]]))}
    labels = pieces([node.token for row in rows for node, _ in row])
    segments, colours, widths, points = [], [], [], {kind: ([], []) for kind in ("kept", "finished", "pruned", "path")}
    parent_x = {0: (columns - 1) / 2}  # step -1: the start symbol, centred
    ax.scatter([(columns - 1) / 2], [0.8], s=90, color="#444444")
    ax.text((columns - 1) / 2 + 0.12, 0.8, "[start]", va="center", fontsize=LABEL_PT)
    for t, row in enumerate(rows):
        beam_x = {}
        for x, (node, kind) in enumerate(row):
            y = -t
            path = (t, tuple(node.tokens)) in on_path
            px = parent_x.get(node.parent, parent_x.get(0)) if t else (columns - 1) / 2
            segments.append([(px, y + 1 - (0.2 if t == 0 else 0)), (x, y)])
            colours.append(CHOSEN if path else {"kept": KEPT, "finished": FINISHED, "pruned": PRUNED}[kind])
            widths.append(2.6 if path else 0.8)
            xs, ys = points["path" if path else kind]
            xs.append(x), ys.append(y)
            ax.text(x + 0.1, y, _label(labels.pop(0), node.score), va="center", fontsize=LABEL_PT,
                    color="#777777" if kind == "pruned" and not path else "black",
                    fontweight="bold" if path else "normal")
            if kind == "kept":
                beam_x[steps[t].beams.index(node)] = x
        parent_x = beam_x
    ax.add_collection(LineCollection(segments, colors=colours, linewidths=widths, zorder=1))
    for kind, colour, marker in (("kept", KEPT, "o"), ("pruned", PRUNED, "o"), ("finished", FINISHED, "s"),
                                 ("path", CHOSEN, "o")):
        ax.scatter(*points[kind], s=55, color=colour, marker=marker, zorder=3)
    ax.set_xlim(-0.4, columns + 0.2)
    ax.set_ylim(-len(rows) + 0.5, 1.2)
    for t in range(len(rows)):
        ax.text(-0.35, -t, f"{t + 1}", ha="right", va="center", fontsize=LABEL_PT, color="#666666")
    handles = [Line2D([], [], color=c, marker=m, ls="", label=name) for c, m, name in
               ((KEPT, "o", "kept beam"), (PRUNED, "o", f"pruned (best {PRUNED_SHOWN})"), (FINISHED, "s", "finished"),
                (CHOSEN, "o", "returned translation's path"))]
    fig.legend(handles=handles, loc="lower center", ncol=4 if width > 8 else 2, fontsize=9, frameon=False)
    cut = f"; the first {len(rows)} of {len(steps)} steps drawn (all in the JSON)" if len(rows) < len(steps) else ""
    if not any(kind == "pruned" for row in rows for _, kind in row) and any(s.pruned for s in steps):
        cut += "; pruned candidates left out to fit"
    chars = int(11 * width)
    lines = textwrap.wrap(title, chars)[:3] + textwrap.wrap("steps top to bottom (numbered), best candidates left; "
                                                           f"labels: piece and total log-probability{cut}", chars)
    fig.suptitle("\n".join(lines), fontsize=10, y=1 - 0.1 / height, va="top")
    return fig
