"""The playground's own parts: what the paper's model must never be built with, built only here.

No positional encoding and a decoder that may read ahead are lessons, not variants: they are not
registered where a ``config.json`` could name them.  ``build_model`` builds the project's ``Transformer``
from a ``TransformerConfig`` and then swaps the parts a lesson removes:

* ``positions="none"``: the base ``PositionalEncoding``, which adds nothing;
* ``causal_mask=False``: the decoder's self-attention kernel ignores its mask (the decoder's only
  mask is the causal one: padding sits at the end of a target, so it needs none of its own);
* ``residual=False``: each sub-layer's residual block becomes LayerNorm(Sublayer(x)) (or, pre-norm,
  Sublayer(LayerNorm(x))), the same norm with the skip connection taken out.

Every decoder self-attention kernel records its weights when asked (``record_self_attention``), so the
playground can show them; the model's own ``decode(need_weights=True)`` gives only cross-attention.
"""
from __future__ import annotations

from typing import Callable, List, Optional

import torch.nn as nn

from ._compat import (NORM, POSITIONAL, PositionalEncoding, Tensor, Transformer, TransformerConfig,
                      scaled_dot_product_attention)

NO_POSITIONS = "none"  # the lesson's own choice: no positional encoding at all
POSITIONS = (*POSITIONAL.names(), NO_POSITIONS)  # the registered encodings, then the lesson's
NORMS = tuple(NORM.names())


def label(field: str, name: str) -> str:
    """What people are shown for a choice of ``positions`` or ``norm``: the registered part's own label."""
    if field == "positions":
        return "none (no positions)" if name == NO_POSITIONS else POSITIONAL.about(name, "label")
    return NORM.about(name, "label")


class DecoderSelfAttention(nn.Module):
    """Equation 1 for the decoder's self-attention, causal or not, keeping its last weights when recording."""

    def __init__(self, causal: bool) -> None:
        super().__init__()
        self.causal, self.recording = causal, False
        self.weights: Optional[Tensor] = None  # (B, h, T, T) of the last call while recording

    def forward(self, q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], need_weights: bool = False):
        out, weights = scaled_dot_product_attention(q, k, v, mask if self.causal else None)
        if self.recording:
            self.weights = weights.detach()
        return out, (weights if need_weights else None)


class WithoutResidual(nn.Module):
    """The norm block of the paper's model with its skip connection removed: only the sub-layer's output goes on."""

    def __init__(self, block: nn.Module) -> None:
        super().__init__()
        self.block = block  # a PostNorm or PreNorm: its LayerNorm, dropout and placement are kept

    def forward(self, x: Tensor, sublayer: Callable[[Tensor], Tensor]) -> Tensor:
        if self.block.final_norm:  # pre-norm: Dropout(Sublayer(LayerNorm(x)))
            return self.block.dropout(sublayer(self.block.norm(x)))
        return self.block.norm(self.block.dropout(sublayer(x)))  # post-norm: LayerNorm(Dropout(Sublayer(x)))


def build_model(config: TransformerConfig, positions: str = "sinusoidal", causal_mask: bool = True,
                residual: bool = True) -> Transformer:
    """The project's ``Transformer`` for ``config``, with the lesson's parts swapped in."""
    if positions not in POSITIONS:
        raise ValueError(f"unknown positions {positions!r}; choose one of {', '.join(POSITIONS)}")
    if positions != NO_POSITIONS and config.positional != positions:
        raise ValueError(f"config.positional is {config.positional!r} but positions={positions!r}")
    model = Transformer(config)
    body = model.body
    if positions == NO_POSITIONS:
        body.positional = PositionalEncoding(config)
    for layer in body.decoder:
        layer.self_attn.kernel = DecoderSelfAttention(causal=causal_mask)
    if not residual:
        for layer in [*body.encoder, *body.decoder]:
            layer.residuals = nn.ModuleList(WithoutResidual(block) for block in layer.residuals)
    return model


def record_self_attention(model: Transformer, on: bool) -> List[DecoderSelfAttention]:
    """Switch recording of the decoder self-attention weights on or off; returns the kernels, bottom first."""
    kernels = [layer.self_attn.kernel for layer in model.body.decoder]
    for kernel in kernels:
        kernel.recording = on
        kernel.weights = None
    return kernels
