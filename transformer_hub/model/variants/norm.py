"""Pre-norm residual blocks (Xiong et al., 2020): x + Dropout(Sublayer(LayerNorm(x)))."""
from typing import Callable

import torch.nn as nn

from ...config import TransformerConfig
from ..model import Dropout, Tensor
from ...registry import NORM


@NORM.register("pre")
class PreNorm(nn.Module):
    """Normalise the sub-layer's input, not the sum; each stack then ends with one LayerNorm."""

    label = "pre-norm"
    final_norm = True
    steps = ("LayerNorm", "sublayer", "Add (residual)")
    exports = {"ctranslate2": {"pre_norm": True}, "marian": "MarianMTModel is post-norm only (no pre-norm residual "
               "blocks, no final LayerNorm); use --format ctranslate2"}

    def __init__(self, d_model: int, dropout: float) -> None:
        super().__init__()
        self.norm, self.dropout = nn.LayerNorm(d_model), Dropout(dropout)

    def forward(self, x: Tensor, sublayer: Callable[[Tensor], Tensor]) -> Tensor:
        return x + self.dropout(sublayer(self.norm(x)))

    @staticmethod
    def parameter_count(config: TransformerConfig) -> int:
        return 2 * config.d_model  # the LayerNorm's gain and bias (each stack's final norm is counted apart)
