"""Interactive attention pictures (Plotly figures, which ``gr.Plot`` draws in the page with plotly.js).

Hovering a cell names the query piece, the key piece (each with the word it belongs to) and the weight;
the page sizes a figure to its width (Gradio turns on plotly's autosize), so the server fixes heights only.
Weights travel as float32 arrays (plotly encodes numpy arrays as typed binary data): what the page holds is
exactly what the model computed, and smaller than a PNG of the same grid.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Sequence

import numpy as np
import plotly.graph_objects as go

from .labels import piece_label

FONT = 13  # px: the page's body text on a phone; no text in these figures is below TICK_FONT
TICK_FONT = 12
COLOURS = "Viridis"
KIND_TITLES = {"encoder_self": "Encoder self-attention", "decoder_self": "Decoder masked self-attention",
               "cross": "Encoder-decoder (cross) attention"}
AXES = {"encoder_self": ("queries: source pieces", "keys: source pieces"),
        "decoder_self": ("queries: target pieces (decoder input)", "keys: earlier target pieces"),
        "cross": ("queries: target pieces (decoder input)", "keys: source pieces (encoder output)")}
PLAIN = "none"  # no theme: plotly's default one adds ~8 kB of JSON to every figure and draws a grey canvas
MODEL_VIEW_COLUMNS = 2  # heads per row: two tiles stay readable at 390 px, and fill a desktop page


def words_of(pieces: Sequence[str]) -> List[str]:
    """For each piece, the word it is part of (the pieces from the last word start, "▁", up to the next)."""
    words: List[List[int]] = []
    for i, piece in enumerate(pieces):
        inside_word = bool(piece) and not piece.startswith("\u2581") and piece[0].isalnum() and words and \
            not pieces[words[-1][-1]].startswith("<")
        if inside_word:
            words[-1].append(i)
        else:
            words.append([i])
    of = [""] * len(pieces)
    for members in words:
        text = "".join(pieces[i] for i in members).replace("\u2581", "")
        for i in members:
            of[i] = text
    return of


def hover_labels(pieces: Sequence[str]) -> List[str]:
    """A piece as its label, with its word when the piece is only part of one ("-ter (in Later)")."""
    words = words_of(pieces)
    labels = []
    for piece, word in zip(pieces, words):
        label = piece_label(piece)
        labels.append(label if word in (label, "") or label.startswith("[") else f"{label} (in {word})")
    return labels


def _hover(rows: Sequence[str], cols: Sequence[str], row_name: str, col_name: str) -> List[List[str]]:
    """The hover text of every cell: the query and the key it looked at."""
    row_text, col_text = hover_labels(rows), hover_labels(cols)
    return [[f"{row_name}: {r}<br>{col_name}: {c}" for c in col_text] for r in row_text]


def _axis(labels: Sequence[str], title: str = "", ticks: bool = True, **extra) -> Dict[str, Any]:
    """A numeric axis labelled with the pieces (category axes would merge two equal pieces into one)."""
    axis = dict(tickmode="array", tickvals=list(range(len(labels))), ticktext=list(labels), showgrid=False,
                zeroline=False, tickfont=dict(size=TICK_FONT), automargin=True, showticklabels=ticks,
                ticks="outside" if ticks else "", **extra)
    if title:
        axis["title"] = dict(text=title, font=dict(size=FONT))
    return axis


def heatmap(matrix, rows: Sequence[str], cols: Sequence[str], title: str, row_title: str,
            col_title: str) -> go.Figure:
    """One attention matrix, rows (queries) down, columns (keys) across, every piece labelled.  Titles break
    their lines themselves ("<br>"): plotly does not wrap, and a phone is 390 px wide."""
    z = np.asarray(matrix, dtype=np.float32)
    height = int(min(900, max(340, 26 * len(rows) + 190)))
    trace = go.Heatmap(z=z, text=_hover(rows, cols, "query", "key"), colorscale=COLOURS, zmin=0.0, zmax=1.0,
                       hovertemplate="%{text}<br>weight: %{z:.3f}<extra></extra>",
                       colorbar=dict(title=dict(text="weight", font=dict(size=TICK_FONT)), thickness=12,
                                     tickfont=dict(size=TICK_FONT)))
    layout = dict(title=dict(text=title, font=dict(size=FONT + 1)), height=height, font=dict(size=FONT), template=PLAIN,
                  margin=dict(l=10, r=10, t=70, b=10),
                  xaxis=_axis([piece_label(p) for p in cols], col_title, tickangle=-60),
                  yaxis=_axis([piece_label(p) for p in rows], row_title, autorange="reversed"))
    return go.Figure(data=[trace], layout=layout)


def attention_figure(matrix, source: List[str], target: List[str], title: str) -> go.Figure:
    """The Attention tab's cross-attention: one row per target piece, one column per source piece; the title's
    parts ("what · model") on lines of their own."""
    return heatmap(matrix, target, source, title.replace(" \u00b7 ", "<br>"), "target pieces (decoder)",
                   "source pieces (encoder)")


def head_view(maps: Dict[str, Any], kind: str, layer: int, head: int) -> go.Figure:
    """One head of one layer (``layer``, ``head`` from 1), with the pieces on both axes."""
    rows, cols = axes_pieces(maps, kind)
    row_title, col_title = AXES[kind]
    return heatmap(maps[kind][layer - 1][head - 1], rows, cols, f"{KIND_TITLES[kind]}<br>layer {layer}, head {head}",
                   row_title, col_title)


def axes_pieces(maps: Dict[str, Any], kind: str):
    """(row pieces, column pieces) of ``kind``: queries then keys."""
    source, target = maps["source_pieces"], maps["target_pieces"]
    return {"encoder_self": (source, source), "decoder_self": (target, target), "cross": (target, source)}[kind]


def model_view(maps: Dict[str, Any], kind: str, layer: int) -> go.Figure:
    """Every head of layer ``layer`` (from 1), ``MODEL_VIEW_COLUMNS`` tiles a row, one colour scale."""
    weights = np.asarray(maps[kind][layer - 1], dtype=np.float32)  # heads x queries x keys
    heads = weights.shape[0]
    rows, cols = axes_pieces(maps, kind)
    n_cols = min(heads, MODEL_VIEW_COLUMNS)
    n_rows = math.ceil(heads / n_cols)
    gap_x, gap_y = 0.06, 0.22 / n_rows
    width, height = (1 - gap_x * (n_cols - 1)) / n_cols, (1 - gap_y * (n_rows - 1)) / n_rows
    text = _hover(rows, cols, "query", "key")
    layout: Dict[str, Any] = dict(
        title=dict(text=f"{KIND_TITLES[kind]}<br>layer {layer}, every head (rows: queries, columns: keys)",
                   font=dict(size=FONT + 1)),
        height=int(n_rows * min(360, max(200, 14 * len(rows) + 120)) + 60), font=dict(size=FONT), template=PLAIN,
        margin=dict(l=10, r=10, t=80, b=10), annotations=[])
    traces = []
    for h in range(heads):
        r, c = divmod(h, n_cols)
        suffix = "" if h == 0 else str(h + 1)
        x0, y1 = c * (width + gap_x), 1 - r * (height + gap_y)
        x1, y0 = min(1.0, x0 + width), max(0.0, y1 - height)  # float sums may step past [0, 1]
        layout[f"xaxis{suffix}"] = _axis(cols, ticks=False, domain=[x0, x1], anchor=f"y{suffix}")
        layout[f"yaxis{suffix}"] = _axis(rows, ticks=False, domain=[y0, y1], anchor=f"x{suffix}",
                                         autorange="reversed")
        layout["annotations"].append(dict(text=f"head {h + 1}", x=x0 + width / 2, y=y1, xref="paper", yref="paper",
                                          xanchor="center", yanchor="bottom", showarrow=False,
                                          font=dict(size=FONT)))
        traces.append(go.Heatmap(z=weights[h], text=text, xaxis=f"x{suffix}", yaxis=f"y{suffix}", zmin=0.0, zmax=1.0,
                                 colorscale=COLOURS, showscale=h == 0, name=f"head {h + 1}",
                                 hovertemplate=f"head {h + 1}<br>%{{text}}<br>weight: %{{z:.3f}}<extra></extra>",
                                 colorbar=dict(thickness=12, tickfont=dict(size=TICK_FONT))))
    return go.Figure(data=traces, layout=layout)
