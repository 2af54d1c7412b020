"""Positional information (section 3.5), read off the model's own positional module.

An additive encoding (the paper's sinusoids, learned positions) is what the module adds to a zero
embedding at each position; its dot products show how alike two positions look to the first layer.
A rotary encoding adds nothing: it rotates queries and keys, so what it does is shown on the score of
a query and a key (both the all-ones vector) as their distance grows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import torch

Tensor = torch.Tensor
SPREAD = (0.03, 0.08, 0.16, 0.32)  # default curves: dimensions at these fractions of d_model (growing wavelengths)


@dataclass
class PositionalView:
    """``kind`` "added" or "rotary".  For "added": ``encoding`` (length, d_model), the vector added at each
    position, ``curves`` a few of its dimensions over the positions, ``similarity`` (length, length) the
    dot products of those vectors.  For "rotary": ``similarity[m, n]`` is q·k / d_k for q = k = ones(d_k)
    rotated to positions m and n, and ``by_distance[d]`` its value at distance d (row 0)."""

    kind: str
    positional: str  # the config's name for the encoding
    length: int
    similarity: Tensor
    encoding: Optional[Tensor] = None
    dims: List[int] = field(default_factory=list)
    by_distance: List[float] = field(default_factory=list)

    @property
    def curves(self) -> Dict[int, List[float]]:
        return {d: self.encoding[:, d].tolist() for d in self.dims} if self.encoding is not None else {}

    def to_dict(self, decimals: int = 4) -> Dict[str, Any]:
        def rounded(t: Tensor) -> list:
            return torch.round(t, decimals=decimals).tolist()

        return {"kind": self.kind, "positional": self.positional, "length": self.length,
                "similarity": rounded(self.similarity),
                "encoding": None if self.encoding is None else rounded(self.encoding),
                "curves": {str(d): [round(v, decimals) for v in values] for d, values in self.curves.items()},
                "by_distance": [round(v, decimals) for v in self.by_distance]}


def positional_encoding(model, length: int = 50, dims: Optional[Sequence[int]] = None) -> PositionalView:
    """What ``model``'s positional module does over the first ``length`` positions (see the module doc).

    ``dims``: the dimensions drawn as curves (default: four even ones spread over d_model, from short
    wavelengths to long ones)."""
    config = model.config
    if isinstance(length, bool) or not isinstance(length, int) or not 2 <= length <= config.max_len:
        raise ValueError(f"length must be an integer between 2 and max_len={config.max_len}, got {length!r}")
    module = model.body.positional
    positions = torch.arange(length)[None]  # (1, length)
    with torch.no_grad():
        rotate = module.rotation(positions)
        if rotate is not None:
            return _rotary(config, rotate, length)
        encoding = module(torch.zeros(1, length, config.d_model), positions)[0].float()  # (length, d_model)
    if dims is None:
        dims = sorted({2 * round(f * config.d_model / 2) for f in SPREAD})
    bad = [d for d in dims if not 0 <= int(d) < config.d_model]
    if bad:
        raise ValueError(f"dims {bad} are outside 0..{config.d_model - 1} (d_model={config.d_model})")
    return PositionalView(kind="added", positional=config.positional, length=length, encoding=encoding,
                          dims=[int(d) for d in dims], similarity=encoding @ encoding.T)


def _rotary(config, rotate, length: int) -> PositionalView:
    d_k = config.d_model // config.n_heads
    rotated = rotate(torch.ones(1, 1, length, d_k))[0, 0].float()  # (length, d_k): ones at each position
    similarity = rotated @ rotated.T / d_k
    return PositionalView(kind="rotary", positional=config.positional, length=length, similarity=similarity,
                          by_distance=similarity[0].tolist())
