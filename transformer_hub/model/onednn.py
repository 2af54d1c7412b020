"""PyTorch's private oneDNN operators (``torch.ops.mkldnn._*``): used here only, and only once they prove to work.

They are not public API: a PyTorch release may rename, remove or change them.  ``available()`` runs them once on
a small input against ``F.linear``; if an operator is missing, raises or disagrees, it is False and
``kernels.output_logits`` takes the public path (``torch.mm``).
"""
from __future__ import annotations

import functools
from typing import Optional

import torch
import torch.nn.functional as F

Tensor = torch.Tensor
FAILURES = (AttributeError, NotImplementedError, RuntimeError, TypeError)  # what a missing or changed op raises


def _pack(weight: Tensor) -> Tensor:
    return torch.ops.mkldnn._reorder_linear_weight(weight, None)


def _linear(hidden: Tensor, packed: Tensor) -> Tensor:
    return torch.ops.mkldnn._linear_pointwise(hidden, packed, None, "none", [], "")


@functools.lru_cache(maxsize=None)
def _works() -> bool:
    generator = torch.Generator().manual_seed(0)  # the global random stream stays untouched
    weight, hidden = torch.randn(40, 16, generator=generator), torch.randn(3, 16, generator=generator)
    try:
        with torch.no_grad():
            got, expected = _linear(hidden, _pack(weight)), F.linear(hidden, weight)
        return got.shape == expected.shape and torch.allclose(got, expected, rtol=1e-4, atol=1e-4)  # entries ~4
    except FAILURES:
        return False


def available() -> bool:
    """Whether this PyTorch has oneDNN and its private linear operators compute ``F.linear``."""
    return torch.backends.mkldnn.is_available() and _works()


def pack(weight: Tensor) -> Optional[Tensor]:
    """A float32 CPU weight (V, d) in oneDNN's layout, or None where that cannot be made."""
    if not available():
        return None
    try:
        return _pack(weight.detach())
    except FAILURES:
        return None


def linear(hidden: Tensor, packed: Tensor) -> Tensor:
    """``F.linear(hidden, weight)`` for the ``pack``-ed weight: (N, d) -> (N, V)."""
    return _linear(hidden.contiguous(), packed)
