"""The static (PNG) attention pictures the Space drew before its interactive ones (``attention_plots``).

Kept as the reference ``python -m benchmarks inside`` times the interactive figures against, in the same
run, for the same attention: the Attention tab's heatmap, BertViz's model view (every layer and head as one
image of tiles) and the head view.  matplotlib's object API, as ``plots.py``.
"""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

import numpy as np
from matplotlib.figure import Figure

from .attention import KIND_TITLES, axes_pieces
from .inside import CMAP, WIDTH, _fixed, _longest
from .labels import piece_label as _label


def attention_figure(matrix: Sequence[Sequence[float]], source: List[str], target: List[str], title: str) -> Figure:
    """Heatmap: one row per target piece, one column per source piece."""
    rows, cols = len(target), len(source)
    width = min(16.0, max(5.0, 0.45 * cols + 2.0))
    height = min(16.0, max(3.5, 0.38 * rows + 1.8))
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(matrix, cmap="viridis", aspect="auto", vmin=0.0, interpolation="nearest")
    ax.set_xticks(range(cols), [_label(p) for p in source], rotation=60, ha="right", fontsize=9)
    ax.set_yticks(range(rows), [_label(p) for p in target], fontsize=9)
    ax.set_xlabel("source pieces (encoder)")
    ax.set_ylabel("target pieces (decoder)")
    ax.set_title(title, fontsize=11)
    fig.colorbar(image, ax=ax, shrink=0.8, label="attention weight")
    return fig


def model_view(data: Dict[str, Any], kind: str) -> Figure:
    """A grid of small heatmaps, layers by heads, of one kind of attention (BertViz's "model view").

    One image of tiles with blank gutters (one axes, not layers x heads of them: several times faster to draw)."""
    weights = np.asarray(data[kind], dtype=float)  # layers x heads x queries x keys
    layers, heads, rows, cols = weights.shape
    gap = max(1, round(0.15 * max(rows, cols)))
    tiles = np.full((layers * (rows + gap) - gap, heads * (cols + gap) - gap), np.nan)
    for i in range(layers):
        for h in range(heads):
            tiles[i * (rows + gap):i * (rows + gap) + rows, h * (cols + gap):h * (cols + gap) + cols] = weights[i, h]
    height = min(14.0, WIDTH * tiles.shape[0] / tiles.shape[1] + 1.2)
    fig = _fixed(WIDTH, height, left=0.9, right=0.2, top=0.75, bottom=0.15)
    ax = fig.add_subplot()
    ax.imshow(np.ma.masked_invalid(tiles), cmap=CMAP, vmin=0.0, vmax=1.0, interpolation="nearest", aspect="auto")
    ax.set_xticks([h * (cols + gap) + (cols - 1) / 2 for h in range(heads)], [f"head {h + 1}" for h in range(heads)])
    ax.set_yticks([i * (rows + gap) + (rows - 1) / 2 for i in range(layers)], [f"layer {i + 1}" for i in range(layers)])
    ax.xaxis.tick_top()
    ax.tick_params(length=0, labelsize=10)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(f"{KIND_TITLES[kind]}: every layer (rows) and head (columns); in each tile, rows are queries "
                 "and columns keys", fontsize=11)
    return fig


def head_view(data: Dict[str, Any], kind: str, layer: int, head: int) -> Figure:
    """One head of one layer, large, with the pieces on both axes (``layer``, ``head`` from 1)."""
    matrix = data[kind][layer - 1][head - 1]
    rows, cols = axes_pieces(data, kind)
    width = min(WIDTH, max(6.0, 0.42 * len(cols) + 3.0))
    left, bottom = 0.08 * _longest([_label(p) for p in rows]) + 0.8, 0.07 * _longest([_label(p) for p in cols]) + 0.8
    fig = _fixed(width, min(12.0, max(4.0, 0.36 * len(rows) + 2.2)) + bottom, left=left, right=1.3, top=0.45,
                 bottom=bottom)
    ax = fig.add_subplot()
    image = ax.imshow(matrix, cmap=CMAP, vmin=0.0, vmax=1.0, interpolation="nearest", aspect="auto")
    ax.set_xticks(range(len(cols)), [_label(p) for p in cols], rotation=60, ha="right", fontsize=9)
    ax.set_yticks(range(len(rows)), [_label(p) for p in rows], fontsize=9)
    ax.set_xlabel("keys: " + ("source pieces (encoder output)" if kind != "decoder_self" else "earlier target pieces"))
    ax.set_ylabel("queries: " + ("source pieces" if kind == "encoder_self" else "target pieces (decoder input)"))
    ax.set_title(f"{KIND_TITLES[kind]}, layer {layer}, head {head}", fontsize=11)
    fig.colorbar(image, cax=fig.add_axes((1 - 1.05 / width, 0.2, 0.18 / width, 0.6)), label="attention weight")
    return fig
