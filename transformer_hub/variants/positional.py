"""Positional encodings beside the paper's sinusoids: learned (Table 3, row E) and rotary (RoPE)."""
import torch
import torch.nn as nn

from ..config import TransformerConfig
from ..model import PositionalEncoding, Tensor, sinusoid_table
from ..registry import POSITIONAL


@POSITIONAL.register("learned")
class LearnedPositionalEncoding(PositionalEncoding):
    """One learned vector per position, added to the embeddings (Table 3, row E)."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__(config)
        self.embedding = nn.Embedding(config.max_len, config.d_model)
        nn.init.normal_(self.embedding.weight, std=config.d_model ** -0.5)

    def forward(self, x: Tensor, positions: Tensor) -> Tensor:  # (B, T, d), (B|1, T)
        return x + self.embedding(positions)


@POSITIONAL.register("rope")
class RotaryPositionalEncoding(PositionalEncoding):
    """Rotary positions (Su et al., 2021): rotate each query/key pair of dims by a position-dependent angle.

    Applied in self-attention only; the embeddings get no additive encoding.
    Pairs are (i, i + d_k/2), the "rotate half" convention.
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__(config)
        d_k = config.d_model // config.n_heads
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d_k, 2, dtype=torch.float64) / d_k))  # (d_k/2,)
        angles = torch.arange(config.max_len, dtype=torch.float64)[:, None] * inv_freq[None]  # (max_len, d_k/2)
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def rotate(self, x: Tensor, positions: Tensor) -> Tensor:  # x (B, h, T, d_k), positions (B|1, T)
        cos, sin = self.cos[positions][:, None], self.sin[positions][:, None]  # (B|1, 1, T, d_k/2)
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


__all__ = ["LearnedPositionalEncoding", "RotaryPositionalEncoding", "sinusoid_table"]
