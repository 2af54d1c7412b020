"""Feed-forward blocks beside the paper's ReLU: GELU, and SwiGLU (Shazeer, 2020)."""
import torch.nn as nn
import torch.nn.functional as F

from ...config import TransformerConfig
from ..model import PositionwiseFeedForward, Tensor
from ...registry import FEED_FORWARD


@FEED_FORWARD.register("gelu")
class GELUFeedForward(PositionwiseFeedForward):
    """Equation 2 with GELU in place of ReLU."""

    label = "GELU"
    exports = {"ctranslate2": {"activation": "GELU"}, "marian": {"activation_function": "gelu"}}  # both erf GELU

    activation = staticmethod(F.gelu)
    parameter_count = staticmethod(PositionwiseFeedForward.parameter_count)  # equation 2's matrices


@FEED_FORWARD.register("swiglu")
class SwiGLUFeedForward(nn.Module):
    """FFN(x) = (SiLU(x W_1) * x W_3) W_2.

    The hidden size is 2/3 of ``d_ff`` (rounded up to a multiple of 8), so the
    three matrices hold about as many parameters as the paper's two.
    """

    label = "SwiGLU"
    exports = {"ctranslate2": {"activation": "SWISH", "ffn_glu": True},
               "marian": "MarianMTModel's feed-forward has two matrices and one activation, no gated unit for "
               "SwiGLU; use --format ctranslate2"}

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        hidden = self.hidden_size(d_ff)
        self.w_13 = nn.Linear(d_model, 2 * hidden, bias=False)  # W_1 and W_3 in one matmul
        self.w_2 = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:  # (B, T, d_model) -> (B, T, d_model)
        gate, value = self.w_13(x).chunk(2, dim=-1)
        return self.w_2(F.silu(gate) * value)

    @staticmethod
    def hidden_size(d_ff: int) -> int:
        return max(8, (2 * d_ff // 3 + 7) // 8 * 8)

    @classmethod
    def parameter_count(cls, config: TransformerConfig) -> int:
        return 3 * config.d_model * cls.hidden_size(config.d_ff)  # W_1, W_3 and W_2, no biases
