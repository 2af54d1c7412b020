"""Positional encodings beside the paper's sinusoids: learned (Table 3, row E) and rotary (RoPE)."""
import torch
import torch.nn as nn

from ...config import TransformerConfig
from ..model import PositionalEncoding, Rotate, Tensor, sinusoid_table
from ...registry import POSITIONAL


@POSITIONAL.register("learned")
class LearnedPositionalEncoding(PositionalEncoding):
    """One learned vector per position, added to the embeddings (Table 3, row E)."""

    label = "learned positions (added)"
    exports = {"ctranslate2": {}, "marian": "MarianMTModel has only fixed sinusoidal positions (recomputed on load, "
               "never stored): no learned position table; use --format ctranslate2"}

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__(config)
        self.embedding = nn.Embedding(config.max_len, config.d_model)
        nn.init.normal_(self.embedding.weight, std=config.d_model ** -0.5)

    def forward(self, x: Tensor, positions: Tensor) -> Tensor:  # (B, T, d), (B|1, T)
        return x + self.embedding(positions)

    def added_table(self) -> Tensor:
        return self.embedding.weight

    @staticmethod
    def parameter_count(config: TransformerConfig) -> int:
        return config.max_len * config.d_model


@POSITIONAL.register("rope")
class RotaryPositionalEncoding(PositionalEncoding):
    """Rotary positions (Su et al., 2021): rotate each query/key pair of dims by a position-dependent angle.

    Applied in self-attention only; the embeddings get no additive encoding.
    Pairs are (i, i + d_k/2), the "rotate half" convention:
    rot(x) = x * [cos, cos] + roll(x, d_k/2) * [-sin, sin].
    """

    label = "rotary positions (in attention)"
    # whole heads rotated (rotary_dim=0), in the rotate-half layout (rotary_interleave=False)
    exports = {"ctranslate2": {"rotary_dim": 0, "rotary_interleave": False, "rotary_base": 10000.0},
               "marian": "MarianMTModel has no rotary positions (only fixed sinusoids added to the embeddings); "
               "use --format ctranslate2"}

    @staticmethod
    def check(config: TransformerConfig) -> None:
        if (config.d_model // config.n_heads) % 2:
            raise ValueError("rotary positions need an even head size (d_model / n_heads)")

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__(config)
        d_k = config.d_model // config.n_heads
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d_k, 2, dtype=torch.float64) / d_k))  # (d_k/2,)
        angles = torch.arange(config.max_len, dtype=torch.float64)[:, None] * inv_freq[None]  # (max_len, d_k/2)
        self.half = d_k // 2
        self.register_buffer("cos", angles.cos().repeat(1, 2).float(), persistent=False)  # (max_len, d_k)
        self.register_buffer("sin", torch.cat([-angles.sin(), angles.sin()], dim=1).float(), persistent=False)

    @staticmethod
    def parameter_count(config: TransformerConfig) -> int:
        return 0  # fixed rotations, not parameters

    def rotation(self, positions: Tensor) -> Rotate:
        """The tables are looked up once per call; the returned function rotates any (..., B|1, h, T, d_k)."""
        cos, sin = self.cos[positions][:, None], self.sin[positions][:, None]  # (B|1, 1, T, d_k)
        return lambda x: x * cos + x.roll(self.half, dims=-1) * sin


__all__ = ["LearnedPositionalEncoding", "RotaryPositionalEncoding", "sinusoid_table"]
