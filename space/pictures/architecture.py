"""The diagram of an architecture, drawn from a model's config alone (matplotlib).

Every part is asked how it is drawn (``Registry.about``: its label, a norm's steps and final norm, whether the
layout has an encoder); a part that does not say raises ``PartDescriptionError`` instead of being drawn as
another.
"""
from __future__ import annotations

from typing import List

from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from transformer_hub import FEED_FORWARD, LAYOUT, NORM, POSITIONAL, TransformerConfig

# ---------------------------------------------------------------------------- architecture diagram
_COLOURS = {"attn": "#fde2b8", "cross": "#f9c9a0", "ffn": "#c6e5f7", "norm": "#e5e1f5", "embed": "#fbd3d3",
            "pos": "#ffffff", "out": "#d6f0d0"}


def _box(ax, x: float, y: float, w: float, h: float, text: str, colour: str, size: int = 9) -> None:
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08", linewidth=1.0,
                                edgecolor="#444444", facecolor=colour))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size)


def _arrow(ax, x: float, y0: float, y1: float) -> None:
    ax.annotate("", xy=(x, y1), xytext=(x, y0), arrowprops=dict(arrowstyle="->", color="#444444", lw=1.0))


def _sublayers(kind: str, config: TransformerConfig, causal: bool) -> List[tuple]:
    ffn = f"Feed-forward ({FEED_FORWARD.about(config.feed_forward, 'label')}, d_ff={config.d_ff})"
    heads = f"h={config.n_heads}"
    parts = [(f"{'Masked m' if causal else 'M'}ulti-head self-attention ({heads})", "attn")]
    if kind == "decoder":
        parts.append((f"Encoder-decoder attention ({heads})", "cross"))
    parts.append((ffn, "ffn"))
    steps = NORM.about(config.norm, "steps")  # the residual block in order, "sublayer" where the sub-layer goes
    return [(text, colour) if step == "sublayer" else (step, "norm") for text, colour in parts for step in steps]


def _stack(ax, x: float, width: float, title: str, n_layers: int, rows: List[tuple], config: TransformerConfig,
           embed: str, final_norm: bool, top_label: str) -> float:
    y = 0.2
    _box(ax, x, y, width, 0.55, embed, _COLOURS["embed"])
    y += 0.75
    _box(ax, x, y, width, 0.45, POSITIONAL.about(config.positional, "label"), _COLOURS["pos"], 8)
    _arrow(ax, x + width / 2, 0.75, y)
    y += 0.65
    start = y
    for text, colour in rows:
        _arrow(ax, x + width / 2, y - 0.2, y)
        _box(ax, x + 0.15, y, width - 0.3, 0.5, text, _COLOURS[colour], 8)
        y += 0.7
    ax.add_patch(FancyBboxPatch((x - 0.05, start - 0.12), width + 0.1, y - start - 0.05,
                                boxstyle="round,pad=0.02,rounding_size=0.1", linewidth=1.4, linestyle="--",
                                edgecolor="#777777", facecolor="none"))
    ax.text(x - 0.15, (start + y) / 2, f"{n_layers}×", ha="right", va="center", fontsize=13, fontweight="bold")
    y += 0.05
    if final_norm:
        _box(ax, x, y, width, 0.45, "Final LayerNorm", _COLOURS["norm"], 8)
        y += 0.65
    _box(ax, x, y, width, 0.5, top_label, _COLOURS["out"], 9)
    ax.text(x + width / 2, y + 0.7, title, ha="center", va="bottom", fontsize=11, fontweight="bold")
    return y + 1.2  # the top of what was drawn


def architecture_figure(config: TransformerConfig, title: str = "") -> Figure:
    """A block diagram of ``config``: the paper's Figure 1 redrawn for its layout, norm, positions, FFN."""
    decoder_only = not LAYOUT.about(config.layout, "has_encoder")
    final_norm = NORM.about(config.norm, "final_norm")
    n_sub = 2 if decoder_only else 3
    height = 3.4 + 0.7 * n_sub * len(NORM.about(config.norm, "steps")) + (0.65 if final_norm else 0)
    fig = Figure(figsize=(9.5 if not decoder_only else 7.5, 0.55 * height + 0.9), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    ax.set_axis_off()
    width = 3.6
    if decoder_only:
        top = _stack(ax, 0.8, width, f"Decoder-only ({config.n_decoder_layers} causal layers)", config.n_decoder_layers,
               _sublayers("encoder", config, causal=True), config, "Token embedding of  source <sep> target",
               final_norm, "Linear + softmax (next token)")
        ax.set_xlim(-0.2, 0.8 + width + 0.4)
    else:
        top = _stack(ax, 0.8, width, "Encoder", config.n_encoder_layers, _sublayers("encoder", config, causal=False),
               config, "Source embedding", final_norm, "Memory → decoder's cross-attention")
        top = _stack(ax, 5.4, width, "Decoder", config.n_decoder_layers, _sublayers("decoder", config, causal=True),
               config, "Target embedding (shifted right)", final_norm, "Linear + softmax (next token)")
        ax.set_xlim(-0.2, 5.4 + width + 0.3)
    ax.set_ylim(0, top)
    fig.set_size_inches(fig.get_figwidth(), 0.55 * top + 0.9)
    facts = (f"d_model={config.d_model} · heads={config.n_heads} · d_ff={config.d_ff} · "
             f"{NORM.about(config.norm, 'label')} · {config.positional} · {config.feed_forward}"
             + ("\n" if decoder_only else " · ") +
             f"~{config.num_parameters() / 1e6:.2f} M parameters")
    fig.suptitle((title + "\n" if title else "") + facts, fontsize=10)
    return fig
