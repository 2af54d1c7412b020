"""Next-token scores over a large vocabulary, without (N, V) temporaries.

Once the decoder is cached, the output side dominates a batched decoding
step: the (N, d_model) x (d_model, V) projection, then a max / top-k and a
log-normaliser over N x V logits.  PyTorch's CPU ``argmax`` / ``topk`` scan
the row element by element and ``logsumexp`` allocates (N, V) temporaries,
so here:

* the projection writes into a buffer reused across steps (``Projection``);
* max and top-k look at block maxima first (one vectorised ``amax`` pass),
  then search only the winning blocks: exact, same values as ``torch.max`` /
  ``torch.topk``, first index on ties for the max;
* ``log_normalizer_`` computes ``logsumexp`` in place, destroying the logits.
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import nn

Tensor = torch.Tensor
BLOCK = 128  # logits per block for the block-maxima searches
MIN_ROWS = 32  # below this many rows the plain scans are as fast (measured on a 2-core CPU)


def _blocks(logits: Tensor) -> Tuple[Tensor, Tensor, int]:
    """(N, V) -> a (N, V // BLOCK, BLOCK) view of the whole blocks, their maxima (N, V // BLOCK), where the tail starts."""
    N, V = logits.shape
    n_blocks = V // BLOCK
    whole = n_blocks * BLOCK
    blocks = logits[:, :whole].unflatten(1, (n_blocks, BLOCK))
    if logits.stride(0) == 1:  # (V, N) memory, as Projection writes it: reduce along the rows
        maxima = logits.t()[:whole].unflatten(0, (n_blocks, BLOCK)).amax(dim=1).t()
    else:
        maxima = blocks.amax(dim=-1)
    return blocks, maxima, whole


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


def log_normalizer_(logits: Tensor, row_max: Tensor) -> Tensor:
    """``torch.logsumexp(logits, -1)`` for rows whose maximum is ``row_max``; overwrites ``logits``."""
    return logits.sub_(row_max[:, None]).exp_().sum(dim=-1).log_().add_(row_max)


class Projection:
    """Applies the model's output layer to (N, d_model) states, writing float32 logits into a reused buffer.

    For a bias-free ``nn.Linear`` (the paper's tied pre-softmax matrix) it
    computes ``W @ h^T`` into the buffer and returns its (N, V) transpose:
    that product is the faster one for few rows on the CPU, and reusing the
    memory avoids faulting in fresh pages every step.  Any other output
    module is simply called.  The logits are valid until the next call.
    """

    def __init__(self) -> None:
        self.buffer: Optional[Tensor] = None

    def __call__(self, generator: nn.Module, hidden: Tensor) -> Tensor:
        if not (type(generator) is nn.Linear and generator.bias is None and generator.weight.dtype == torch.float32
                and hidden.dtype == torch.float32 and not torch.is_grad_enabled()):
            return generator(hidden).float()
        weight = generator.weight
        V, N = weight.size(0), hidden.size(0)
        if self.buffer is None or self.buffer.numel() < V * N or self.buffer.device != hidden.device:
            self.buffer = torch.empty(V * N, device=hidden.device)
        out = self.buffer[: V * N].view(V, N)
        return torch.mm(weight, hidden.t(), out=out).t()  # (N, V)
