"""Speed-only kernels, each beside the plain reference it must equal (``tests/test_kernels.py`` compares them).

Nothing here changes what the model computes; each kernel is a faster way
to compute its reference on the CPU:

* ``Dropout``: inverted dropout whose mask comes from 16 random bits per
  element (reference: ``dropout_reference``, ``x * keep / (1 - p)``, with the
  same keep probability as ``nn.Dropout`` up to p's rounding to 1/65536);
  ``bernoulli_``'s 32-bit draw plus conversion dominated the masks' cost.
  It also honours ``no_dropout()``, a thread-local switch that decoding uses
  instead of flipping ``module.training`` (which other threads may read).
* ``output_logits``: the bias-free output layer ``hidden @ weight.T``
  (reference: ``F.linear``).  ``torch.mm`` with the stored (V, d_model)
  weight repacks the whole matrix at every call; the weight is instead
  packed once in oneDNN's layout (``prepared``; remade when it changes).
  The same kernel serves every row count, so a row's logits do not depend
  on how many rows are projected with it (tested bit for bit).
* ``Projection``: ``output_logits`` then ``log_softmax`` into buffers reused
  across decoding steps (fresh (N, V) tensors fault in new pages each step).
* ``max_and_argmax`` / ``topk`` (references: ``torch.max`` / ``torch.topk``):
  block maxima first (one vectorised ``amax`` pass), then only the winning
  blocks are searched; PyTorch's CPU ``argmax`` / ``topk`` scan a row element
  by element.  Exact; the algorithm depends on the vocabulary size and k,
  never on the number of rows.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Iterator, NamedTuple, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from ..caching import WeakVersionCache

Tensor = torch.Tensor


# --------------------------------------------------------------------------- dropout
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


def dropout_reference(x: Tensor, keep: Tensor, p: float) -> Tensor:
    """Inverted dropout given its keep mask: kept elements scaled by 1 / (1 - p), the rest zero."""
    return x * keep.to(x.dtype) / (1.0 - p)


def keep_mask16(shape: torch.Size, p: float) -> Tensor:
    """A CPU bool mask, each element True with probability 1 - round(p * 65536) / 65536, from 16 random bits."""
    n = 1
    for size in shape:
        n *= size
    threshold = round(p * 65536) - 32768  # keep where a uniform int16 >= threshold
    words = torch.empty((n + 3) // 4, dtype=torch.int64).random_(-2 ** 63, None)  # 64 uniform bits each
    return words.view(torch.int16)[:n].view(shape) >= threshold


class Dropout(nn.Module):
    """Inverted dropout (the paper's section 5.4, P_drop): same contract as ``nn.Dropout``, a 16-bit mask on the CPU."""

    def __init__(self, p: float) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0 or dropout_disabled():
            return x
        if x.device.type != "cpu":
            return F.dropout(x, self.p, training=True)
        keep = keep_mask16(x.shape, self.p)
        return x * (keep * (1.0 / (1.0 - self.p))).to(x.dtype)  # one fused scale: equal to dropout_reference

    def extra_repr(self) -> str:
        return f"p={self.p}"


# --------------------------------------------------------------------------- max and top-k over a vocabulary
BLOCK = 128  # logits per block for the block-maxima searches


def _blocks(logits: Tensor) -> Tuple[Tensor, Tensor, int]:
    """(N, V) -> a (N, V // BLOCK, BLOCK) view of the whole blocks, their maxima (N, V // BLOCK), where the tail starts."""
    N, V = logits.shape
    n_blocks = V // BLOCK
    whole = n_blocks * BLOCK
    blocks = logits[:, :whole].unflatten(1, (n_blocks, BLOCK))
    return blocks, blocks.amax(dim=-1), whole


def max_and_argmax(logits: Tensor) -> Tuple[Tensor, Tensor]:
    """Row maxima and their first index, as ``logits.max(dim=-1)`` (the reference): (N, V) -> (N,), (N,)."""
    N, V = logits.shape
    if V < 2 * BLOCK:
        return logits.max(dim=-1)
    blocks, maxima, whole = _blocks(logits)
    best, block = maxima.max(dim=-1)  # (N,): the first block holding the row maximum
    inside = blocks.gather(1, block[:, None, None].expand(N, 1, BLOCK)).squeeze(1).argmax(dim=-1)
    index = block * BLOCK + inside
    if whole < V:  # the tail after the last whole block wins only if strictly larger
        tail_best, tail_index = logits[:, whole:].max(dim=-1)
        later = tail_best > best
        best, index = torch.where(later, tail_best, best), torch.where(later, tail_index + whole, index)
    return best, index


def topk(logits: Tensor, k: int) -> Tuple[Tensor, Tensor]:
    """The k largest logits per row, best first, and their indices: (N, V) -> (N, k), (N, k).

    The reference is ``torch.topk``: the values are equal; among tied values
    the index chosen may differ, as ``torch.topk`` itself leaves that open.
    The k best entries lie in the k blocks with the largest maxima (a block
    outside them has k better maxima above all its entries), so only those
    blocks are searched.
    """
    N, V = logits.shape
    n_blocks = V // BLOCK
    if k > n_blocks // 4 or V < 4 * BLOCK:
        return logits.topk(k, dim=-1)
    blocks, maxima, whole = _blocks(logits)
    chosen = maxima.topk(k, dim=-1).indices  # (N, k)
    candidates = blocks.gather(1, chosen[:, :, None].expand(N, k, BLOCK)).flatten(1)  # (N, k * BLOCK)
    where = (chosen[:, :, None] * BLOCK + torch.arange(BLOCK, device=logits.device)).flatten(1)
    if whole < V:
        candidates = torch.cat([candidates, logits[:, whole:]], dim=1)
        where = torch.cat([where, torch.arange(whole, V, device=logits.device).expand(N, V - whole)], dim=1)
    values, pick = candidates.topk(k, dim=-1)
    return values, where.gather(1, pick)


# --------------------------------------------------------------------------- the output projection
class Prepared(NamedTuple):
    """An output weight (V, d_model) packed in oneDNN's layout for ``output_logits``."""

    packed: Optional[Tensor]  # None: this PyTorch lacks the oneDNN operators


def _pack(weight: Tensor) -> Prepared:
    try:
        return Prepared(torch.ops.mkldnn._reorder_linear_weight(weight.detach(), None))
    except (AttributeError, NotImplementedError, RuntimeError):  # a PyTorch without these oneDNN operators
        return Prepared(None)


# a weight's packed copy, remade when the weight is written in place, dropped when the weight is freed
_PREPARED: WeakVersionCache[Prepared] = WeakVersionCache(lambda weight: (weight._version, weight.data_ptr()))


def prepared(weight: Tensor) -> Optional[Prepared]:
    """The float32 CPU weight packed for oneDNN, made once and remade when the weight changes.

    None where oneDNN cannot be used: another device or dtype, a PyTorch
    without oneDNN, and an inference tensor (it has no version counter to
    tell whether it changed).
    """
    if (weight.device.type != "cpu" or weight.dtype != torch.float32 or weight.is_inference()
            or not torch.backends.mkldnn.is_available()):
        return None
    ready = _PREPARED.get(weight, _pack)
    return ready if ready.packed is not None else None


def output_logits(weight: Tensor, hidden: Tensor, out: Optional[Tensor] = None) -> Tensor:
    """``F.linear(hidden, weight)`` for a bias-free output layer: (N, d_model) -> (N, V).

    The same kernel for every row count (oneDNN with the prepared weight, else
    ``torch.mm`` into ``out``), so a row's logits do not depend on the others.
    """
    ready = prepared(weight)
    if ready is not None:
        return torch.ops.mkldnn._linear_pointwise(hidden.contiguous(), ready.packed, None, "none", [], "")
    return torch.mm(hidden, weight.t(), out=out)


class Projection:
    """The model's output layer, then log-softmax: (N, d_model) states -> (N, V) float32 log-probabilities.

    Reference: ``generator(hidden).log_softmax(-1)``.  For a bias-free
    float32 ``nn.Linear`` (the paper's pre-softmax matrix) outside autograd the
    logits come from ``output_logits``; any other output module is simply
    called.  The log-probabilities go to a buffer reused across calls, so the
    result is valid until the next call.
    """

    def __init__(self) -> None:
        self.logits: Optional[Tensor] = None
        self.log_probs: Optional[Tensor] = None

    @staticmethod
    def _room(buffer: Optional[Tensor], rows: int, like: Tensor, V: int) -> Tensor:
        if buffer is None or buffer.numel() < rows * V or buffer.device != like.device:
            buffer = torch.empty(rows * V, device=like.device)
        return buffer

    def __call__(self, generator: nn.Module, hidden: Tensor) -> Tensor:
        N = hidden.size(0)
        if (type(generator) is nn.Linear and generator.bias is None and generator.weight.dtype == torch.float32
                and hidden.dtype == torch.float32 and not torch.is_grad_enabled()):
            weight, V = generator.weight, generator.weight.size(0)
            out = None
            if prepared(weight) is None:  # torch.mm writes into a reused buffer
                self.logits = self._room(self.logits, N, hidden, V)
                out = self.logits[: N * V].view(N, V)
            logits = output_logits(weight, hidden, out)
        else:
            logits = generator(hidden).float()
            V = logits.size(-1)
        if torch.is_grad_enabled():  # out= tensors take no part in autograd
            return logits.log_softmax(dim=-1)
        self.log_probs = self._room(self.log_probs, N, logits, V)
        return torch.log_softmax(logits, dim=-1, out=self.log_probs[: N * V].view(N, V))
