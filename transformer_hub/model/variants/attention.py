"""The ``sdpa`` kernel: PyTorch's fused ``scaled_dot_product_attention`` (equal to eq. 1 within 1e-5)."""
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..model import Tensor, scaled_dot_product_attention
from ...registry import ATTENTION


@ATTENTION.register("sdpa")
class SDPAttention(nn.Module):
    """Fused attention; falls back to equation 1 written out when the weights are asked for."""

    label = "PyTorch's fused scaled_dot_product_attention"
    exports = {"ctranslate2": {}, "marian": {}}  # a kernel only computes: every runtime has its own

    def forward(self, q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], need_weights: bool = False):
        if need_weights:
            return scaled_dot_product_attention(q, k, v, mask)
        if mask is not None:  # additive mask: a fully masked row gives uniform weights (as in "math"), not NaN
            mask = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).masked_fill(~mask, torch.finfo(q.dtype).min)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), None

    @staticmethod
    def parameter_count(config) -> int:
        return 0  # a kernel only computes; the projections belong to MultiHeadAttention
