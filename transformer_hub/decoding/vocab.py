"""Next-token log-probabilities over a large vocabulary, and fast max / top-k over them.

Once the decoder is cached, the output side dominates a batched decoding
step: the (N, d_model) x (d_model, V) projection, the log-softmax, then a
max / top-k over N x V values.  So here:

* ``Projection`` writes logits and log-probabilities into buffers reused
  across steps (fresh (N, V) tensors fault in new pages every step), and
  normalises with PyTorch's fused row-wise ``log_softmax``: each row is
  read while it is in cache, instead of a logsumexp's whole-tensor passes;
* ``torch.mm`` with the (V, d_model) weight as it is stored repacks the
  whole matrix at every call, which made the projection 2-3.5x slower for
  1-16 rows on this CPU (~15% for 128).  So the weight is prepared once
  (kept per weight, remade when it changes): one row multiplies a
  contiguous (d_model, V) copy (a plain matrix-vector product), more rows
  use oneDNN with the weight packed in its own layout, as ``torch.compile``'s
  CPU backend runs linear layers;
* max and top-k look at block maxima first (one vectorised ``amax`` pass),
  then search only the winning blocks: exact, same values as ``torch.max`` /
  ``torch.topk``, first index on ties for the max.  PyTorch's CPU ``argmax`` /
  ``topk`` scan a row element by element.
"""
from __future__ import annotations

import weakref
from typing import Dict, NamedTuple, Optional, Tuple

import torch
from torch import nn

Tensor = torch.Tensor
BLOCK = 128  # logits per block for the block-maxima searches
MIN_ROWS = 32  # below this many rows the plain scans are as fast (measured on a 2-core CPU)
_PREPARED: Dict[int, tuple] = {}  # id(weight) -> (weakref to it, (version, data pointer), Prepared)


class Prepared(NamedTuple):
    """An output weight (V, d_model) laid out for the projection."""

    transposed: Tensor  # (d_model, V), contiguous
    packed: Optional[Tensor]  # oneDNN's layout; None where oneDNN cannot be used


def _blocks(logits: Tensor) -> Tuple[Tensor, Tensor, int]:
    """(N, V) -> a (N, V // BLOCK, BLOCK) view of the whole blocks, their maxima (N, V // BLOCK), where the tail starts."""
    N, V = logits.shape
    n_blocks = V // BLOCK
    whole = n_blocks * BLOCK
    blocks = logits[:, :whole].unflatten(1, (n_blocks, BLOCK))
    return blocks, blocks.amax(dim=-1), whole


def max_and_argmax(logits: Tensor) -> Tuple[Tensor, Tensor]:
    """Row maxima and their first index, as ``logits.max(dim=-1)``: (N, V) -> (N,), (N,)."""
    N, V = logits.shape
    if N < MIN_ROWS or V < 2 * BLOCK:
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

    The k best entries lie in the k blocks with the largest maxima (a block
    outside them has k better maxima above all its entries), so only those
    blocks are searched.  Values equal ``torch.topk``'s; among tied values the
    index chosen may differ, as ``torch.topk`` itself leaves that open.
    """
    N, V = logits.shape
    n_blocks = V // BLOCK
    if N < MIN_ROWS or k > n_blocks // 4 or V < 4 * BLOCK:
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


def _pack(weight: Tensor) -> Optional[Tensor]:
    try:
        return torch.ops.mkldnn._reorder_linear_weight(weight.detach(), None)
    except (AttributeError, NotImplementedError, RuntimeError):  # a PyTorch without these oneDNN operators
        return None


def prepared(weight: Tensor) -> Optional[Prepared]:
    """The float32 CPU weight's ``Prepared`` copies, made once and remade when the weight changes.

    None for another device or dtype, and for an inference tensor (it has no
    version counter to tell whether it changed).
    """
    if weight.device.type != "cpu" or weight.dtype != torch.float32 or weight.is_inference():
        return None
    key, kept = (weight._version, weight.data_ptr()), _PREPARED.get(id(weight))
    if kept is None or kept[0]() is not weight or kept[1] != key:
        forget = lambda _, i=id(weight): _PREPARED.pop(i, None)  # noqa: E731  (when the weight is freed)
        packed = _pack(weight) if torch.backends.mkldnn.is_available() else None
        copies = Prepared(weight.detach().t().contiguous(), packed)
        kept = _PREPARED[id(weight)] = (weakref.ref(weight, forget), key, copies)
    return kept[2]


class Projection:
    """The model's output layer, then log-softmax: (N, d_model) states -> (N, V) float32 log-probabilities.

    For a bias-free ``nn.Linear`` (the paper's tied pre-softmax matrix) the
    logits come from the weight's ``prepared`` copies (``torch.mm`` into a
    reused buffer, or oneDNN); any other output module is simply called.
    The log-probabilities go to a buffer reused across calls, so the result
    is valid until the next call.
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
            ready = prepared(weight)
            if ready is not None and N > 1 and ready.packed is not None:
                logits = torch.ops.mkldnn._linear_pointwise(hidden.contiguous(), ready.packed, None, "none", [], "")
            else:
                self.logits = self._room(self.logits, N, hidden, V)
                weight_t = ready.transposed if ready is not None and N == 1 else weight.t()  # (d_model, V)
                logits = torch.mm(hidden, weight_t, out=self.logits[: N * V].view(N, V))
        else:
            logits = generator(hidden).float()
            V = logits.size(-1)
        if torch.is_grad_enabled():  # out= tensors take no part in autograd
            return logits.log_softmax(dim=-1)
        self.log_probs = self._room(self.log_probs, N, logits, V)
        return torch.log_softmax(logits, dim=-1, out=self.log_probs[: N * V].view(N, V))
