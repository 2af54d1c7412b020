"""The Transformer of "Attention Is All You Need" (Vaswani et al., 2017), section 3, top to bottom.

Reading order follows the paper: embeddings (3.4), positional encoding (3.5),
scaled dot-product attention (3.2.1, eq. 1), multi-head attention (3.2.2),
position-wise feed-forward networks (3.3, eq. 2), residual + layer norm
(3.1), and the factories that build them from a config; the encoder and decoder stacks (3.1) and the full
model are in ``stacks.py``.

Each swappable part is registered by name (see ``registry.py``); the
alternatives (learned/rotary positions, pre-norm, GELU/SwiGLU, the ``sdpa``
kernel, the decoder-only layout) live in ``variants/``.  Layers receive their
parts as modules; no layer grows boolean flags.  What ``encode`` hands to
``decode`` and the key/value cache of incremental decoding are in ``cache.py``.

Shapes: B batch, S source length, T target length, h heads, d_k = d_model / h.
Masks are boolean and broadcast to (B, h, T_q, T_k); ``True`` means "may attend".
"""
import contextlib
import math
import threading
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import TransformerConfig, part_parameters
from ..registry import ATTENTION, FEED_FORWARD, NORM, POSITIONAL

Tensor = torch.Tensor
Rotate = Callable[[Tensor], Tensor]  # applies rotary positions to (B, h, T, d_k); identity otherwise


# --------------------------------------------------------------------------- 5.4 Residual dropout
_LOCAL = threading.local()


@contextlib.contextmanager
def no_dropout() -> Iterator[None]:
    """In this thread, every ``Dropout`` acts as in eval mode; no module flag is touched (other threads unaffected)."""
    before = getattr(_LOCAL, "off", False)
    _LOCAL.off = True
    try:
        yield
    finally:
        _LOCAL.off = before


def dropout_disabled() -> bool:
    """True inside ``no_dropout()`` in this thread."""
    return getattr(_LOCAL, "off", False)


class Dropout(nn.Dropout):
    """``nn.Dropout`` (P_drop, section 5.4) that also stands aside inside ``no_dropout()``: decoding switches it off
    in its own thread without flipping ``training``, which a thread training the same model reads."""

    def __init__(self, p: float) -> None:
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p}")
        super().__init__(p)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0 or dropout_disabled():
            return x
        return super().forward(x)


# --------------------------------------------------------------------------- 3.4 Embeddings
class Embeddings(nn.Module):
    """Learned token embeddings, multiplied by sqrt(d_model) (section 3.4)."""

    def __init__(self, vocab_size: int, d_model: int, pad_id: int) -> None:
        super().__init__()
        self.lut = nn.Embedding(vocab_size, d_model)
        self.lut.padding_idx = pad_id  # set afterwards: nn.Embedding's own zeroing is very slow on "meta" tensors
        nn.init.normal_(self.lut.weight, mean=0.0, std=d_model ** -0.5)
        with torch.no_grad():
            self.lut.weight[pad_id].zero_()
        self.scale = math.sqrt(d_model)

    def forward(self, ids: Tensor) -> Tensor:  # (B, T) -> (B, T, d_model)
        return self.lut(ids) * self.scale

    @staticmethod
    def parameter_count(vocab_size: int, d_model: int) -> int:
        return vocab_size * d_model


# --------------------------------------------------------------------------- 3.5 Positional encoding
class PositionalEncoding(nn.Module):
    """Base class: ``forward`` adds position information to embeddings, ``rotation`` to queries/keys.

    ``forward`` is the identity and ``rotation`` returns None (nothing to
    rotate) here; a variant overrides one of them.  ``positions`` is a
    LongTensor (B or 1, T) of absolute positions.
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()

    def forward(self, x: Tensor, positions: Tensor) -> Tensor:
        return x

    def rotation(self, positions: Tensor) -> Optional[Rotate]:
        """A function rotating (..., T, d_k) queries/keys at ``positions``, or None when this encoding adds instead."""
        return None

    def added_table(self) -> Optional[Tensor]:
        """The (max_len, d_model) vectors ``forward`` adds at each position, or None when it adds none."""
        return None


def sinusoid_table(max_len: int, d_model: int) -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(...)  (section 3.5)."""
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d/2),)
    angle = pos / torch.pow(10000.0, two_i / d_model)  # (max_len, ceil(d/2))
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table.float()


@POSITIONAL.register("sinusoidal")
class SinusoidalPositionalEncoding(PositionalEncoding):
    """The paper's fixed encoding; a buffer, not a parameter (and not saved)."""

    label = "sinusoidal positions (added)"
    exports = {"ctranslate2": {}, "marian": {}}  # the table is written out (CTranslate2) or permuted into (Marian)

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__(config)
        self.register_buffer("table", sinusoid_table(config.max_len, config.d_model), persistent=False)

    def forward(self, x: Tensor, positions: Tensor) -> Tensor:  # (B, T, d), (B|1, T)
        return x + self.table[positions]

    def added_table(self) -> Tensor:
        return self.table

    @staticmethod
    def parameter_count(config: TransformerConfig) -> int:
        return 0


# --------------------------------------------------------------------------- 3.2.1 Scaled dot-product attention
def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor] = None):
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V  (equation 1). Returns (output, weights).

    Masked scores get the most negative finite float, not -inf, so a query that
    may attend nowhere (a padding row) gives uniform weights instead of NaN.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, h, Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    return weights @ v, weights  # (B, h, Tq, d_k), (B, h, Tq, Tk)


@ATTENTION.register("math")
class MathAttention(nn.Module):
    """Equation 1 written out; always able to return the attention weights."""

    label = "equation 1 written out"
    exports = {"ctranslate2": {}, "marian": {}}  # a kernel only computes: every runtime has its own

    def forward(self, q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], need_weights: bool = False):
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        return out, (weights if need_weights else None)

    @staticmethod
    def parameter_count(config: TransformerConfig) -> int:
        return 0  # a kernel only computes; the projections belong to MultiHeadAttention


# --------------------------------------------------------------------------- 3.2.2 Multi-head attention
class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    The h projections of Q, K and V are packed in one (3 d_model, d_model)
    matrix, so self-attention costs a single matmul.  With a ``cache`` (a
    ``KeyValueBuffer``), self-attention appends the new keys/values to the
    cached ones, and cross-attention stores the memory's keys/values at the
    first step and reuses them.  Returns (output, weights): the weights
    (B, h, Tq, Tk) only with ``need_weights``, else None.
    """

    def __init__(self, d_model: int, n_heads: int, kernel: nn.Module) -> None:
        super().__init__()
        self.h, self.d_k = n_heads, d_model // n_heads
        self.in_proj = nn.Linear(d_model, 3 * d_model)  # [W^Q; W^K; W^V] for all heads
        self.out_proj = nn.Linear(d_model, d_model)  # W^O
        self.kernel = kernel
        nn.init.xavier_uniform_(self.in_proj.weight)
        nn.init.zeros_(self.in_proj.bias)
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.zeros_(self.out_proj.bias)

    @staticmethod
    def parameter_count(d_model: int) -> int:
        return 4 * d_model * d_model + 4 * d_model  # W^Q, W^K, W^V, W^O and their biases

    def _heads(self, x: Tensor, parts: int = 1) -> Tensor:  # (B, T, parts * d_model) -> (parts, B, h, T, d_k)
        B, T = x.size(0), x.size(1)
        return x.view(B, T, parts, self.h, self.d_k).permute(2, 0, 3, 1, 4)

    def forward(self, x: Tensor, memory: Optional[Tensor] = None, mask: Optional[Tensor] = None,
                cache=None, rotate: Optional[Rotate] = None,
                need_weights: bool = False):
        d = self.h * self.d_k
        if memory is None:  # self-attention: queries, keys and values all come from x
            qkv = self._heads(self.in_proj(x), 3)  # (3, B, h, T, d_k)
            if rotate is None:
                q, k, v = qkv.unbind(0)
            else:  # rotary positions: queries and keys rotated together
                (q, k), v = rotate(qkv[:2]).unbind(0), qkv[2]
            if cache is not None:  # a KeyValueBuffer: the keys/values of every token so far
                k, v = cache.append(k, v)  # (B, h, past + T, d_k)
        else:  # encoder-decoder attention: queries from x, keys and values from the encoder output
            w, b = self.in_proj.weight, self.in_proj.bias
            q = self._heads(F.linear(x, w[:d], b[:d]))[0]
            stored = None if cache is None else cache.contents()
            if stored is not None:
                k, v = stored
            else:
                k, v = self._heads(F.linear(memory, w[d:], b[d:]), 2).unbind(0)
                if cache is not None:  # stored once (contiguous), read by every later step
                    k, v = cache.append(k, v)
            if q.size(0) != k.size(0):  # g query rows per memory row (beams): one (B, h, g * Tq) block each
                return self._grouped(x, q, k, v, mask, need_weights)
        out, weights = self.kernel(q, k, v, mask, need_weights)  # (B, h, Tq, d_k)
        out = out.transpose(1, 2).reshape(x.size(0), x.size(1), d)  # concat heads: (B, Tq, d_model)
        return self.out_proj(out), weights

    def _grouped(self, x: Tensor, q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], need_weights: bool):
        """Cross-attention where rows g*b .. g*b + g - 1 of the queries all read memory row b."""
        B, T = k.size(0), q.size(2)
        if q.size(0) % B:
            raise ValueError(f"{q.size(0)} query rows cannot share {B} memory rows evenly")
        g = q.size(0) // B
        q = q.view(B, g, self.h, T, self.d_k).transpose(1, 2).reshape(B, self.h, g * T, self.d_k)  # a view
        out, weights = self.kernel(q, k, v, mask, need_weights)  # (B, h, g * Tq, d_k)
        out = out.view(B, self.h, g, T, self.d_k).permute(0, 2, 3, 1, 4).reshape(x.size(0), T, self.h * self.d_k)
        if weights is not None:  # (B, h, g * Tq, S) -> (B * g, h, Tq, S)
            weights = weights.view(B, self.h, g, T, -1).transpose(1, 2).reshape(x.size(0), self.h, T, -1)
        return self.out_proj(out), weights


# --------------------------------------------------------------------------- 3.3 Position-wise feed-forward
@FEED_FORWARD.register("relu")
class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2  (equation 2)."""

    label = "ReLU"
    exports = {"ctranslate2": {"activation": "RELU"}, "marian": {"activation_function": "relu"}}
    activation: Callable[[Tensor], Tensor] = staticmethod(F.relu)

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.w_1, self.w_2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x: Tensor) -> Tensor:  # (B, T, d_model) -> (B, T, d_model)
        return self.w_2(self.activation(self.w_1(x)))

    @staticmethod
    def parameter_count(config: TransformerConfig) -> int:
        return 2 * config.d_model * config.d_ff + config.d_ff + config.d_model  # W_1, b_1, W_2, b_2


# --------------------------------------------------------------------------- 3.1 Residual connection + layer norm
@NORM.register("post")
class PostNorm(nn.Module):
    """LayerNorm(x + Dropout(Sublayer(x)))  (sections 3.1 and 5.4). Stacks need no final norm."""

    label = "post-norm"
    final_norm = False
    steps = ("sublayer", "Add & LayerNorm")
    exports = {"ctranslate2": {"pre_norm": False}, "marian": {}}

    def __init__(self, d_model: int, dropout: float) -> None:
        super().__init__()
        self.norm, self.dropout = nn.LayerNorm(d_model), Dropout(dropout)

    def forward(self, x: Tensor, sublayer: Callable[[Tensor], Tensor]) -> Tensor:
        return self.norm(x + self.dropout(sublayer(x)))

    @staticmethod
    def parameter_count(config: TransformerConfig) -> int:
        return 2 * config.d_model  # the LayerNorm's gain and bias


@dataclass
class Parts:
    """Factories for the registered parts a config names; layers are built from these."""

    config: TransformerConfig

    def attention(self) -> MultiHeadAttention:
        c = self.config
        return MultiHeadAttention(c.d_model, c.n_heads, ATTENTION.get(c.attention)())

    def feed_forward(self) -> nn.Module:
        return FEED_FORWARD.get(self.config.feed_forward)(self.config.d_model, self.config.d_ff)

    def residual(self) -> nn.Module:
        return NORM.get(self.config.norm)(self.config.d_model, self.config.dropout)

    def final_norm(self) -> nn.Module:
        needs_norm = NORM.about(self.config.norm, "final_norm")
        return nn.LayerNorm(self.config.d_model) if needs_norm else nn.Identity()

    def positional(self) -> PositionalEncoding:
        return POSITIONAL.get(self.config.positional)(self.config)

    def sizes(self) -> Dict[str, int]:
        """Parameters of one instance of each part, from the sizes alone (nothing is allocated)."""
        c = self.config
        return {
            "attention": MultiHeadAttention.parameter_count(c.d_model)
            + part_parameters(ATTENTION.get(c.attention), c, lambda: ATTENTION.get(c.attention)()),
            "feed_forward": part_parameters(FEED_FORWARD.get(c.feed_forward), c, self.feed_forward),
            "residual": part_parameters(NORM.get(c.norm), c, self.residual),
            "final_norm": 2 * c.d_model if NORM.about(c.norm, "final_norm") else 0,
            "positional": part_parameters(POSITIONAL.get(c.positional), c, self.positional),
        }
