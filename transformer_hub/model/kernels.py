"""Speed-only kernels, each against the plain reference it must equal (``tests/test_kernels.py`` compares them).

Nothing here changes what is computed; each kernel is a faster way to compute its reference on the CPU.  The
paper's model uses only the references; ``use_speed_kernels(model)`` swaps in the two training kernels
(``python -m transformer_hub train --speed-kernels``), and decoding uses the other three.

* ``Dropout16`` (reference: the model's ``Dropout``, i.e. ``nn.Dropout``): the keep mask from 16 random bits
  per element (p rounded to 1/65536); ``bernoulli_``'s 32-bit draw plus conversion dominated the masks' cost.
* ``FusedSmoothedLoss`` (reference: ``losses.SmoothedLoss``, ``F.cross_entropy`` with label smoothing):
  ``F.cross_entropy`` makes about eight passes over the (tokens x vocabulary) logits, a third of a CPU training
  step at a 10k vocabulary; fused with the bias-free output layer, the logits are made a slab of rows at a
  time and never stored, the gradient softmax - (1 - eps) onehot - eps / V built in place.
* ``output_logits`` (reference: ``F.linear``): the bias-free output layer with the weight packed once in
  oneDNN's layout (``prepared``; remade when it changes; ``onednn.py`` holds the private operators), where
  ``torch.mm`` repacks the whole matrix at every call.  One kernel for every row count, so a row's logits do
  not depend on the others (tested bit for bit).  ``Projection``: then ``log_softmax``, into reused buffers.
* ``max_and_argmax`` / ``topk`` (references: ``torch.max`` / ``torch.topk``): block maxima first, then only
  the winning blocks are searched (PyTorch's CPU versions scan a row element by element).  Exact; the
  algorithm depends on the vocabulary size and k, never on the number of rows.
"""
from __future__ import annotations

from typing import NamedTuple, Optional, Tuple

import torch
from torch import nn

from ..caching import WeakVersionCache
from . import onednn
from .losses import SmoothedLoss, check_reduction
from .model import Dropout, dropout_disabled

Tensor = torch.Tensor


def use_speed_kernels(model: nn.Module, on: bool = True) -> nn.Module:
    """Swap ``model``'s dropout and loss for their kernels (``on``) or back to the references; returns ``model``.

    Only the exact reference and kernel classes are swapped (a plugin's subclass is left alone); no weight,
    buffer or training flag changes, so a checkpoint is the same either way.
    """
    swaps = {Dropout: Dropout16, SmoothedLoss: FusedSmoothedLoss}
    if not on:
        swaps = {kernel: reference for reference, kernel in swaps.items()}
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) in swaps:
                new = swaps[type(child)](child.p) if isinstance(child, Dropout) else swaps[type(child)]()
                setattr(parent, name, new.train(child.training))
    return model


# --------------------------------------------------------------------------- dropout
def keep_mask16(shape: torch.Size, p: float) -> Tensor:
    """A CPU bool mask, each element True with probability 1 - round(p * 65536) / 65536, from 16 random bits."""
    n = 1
    for size in shape:
        n *= size
    threshold = round(p * 65536) - 32768  # keep where a uniform int16 >= threshold
    words = torch.empty((n + 3) // 4, dtype=torch.int64).random_(-2 ** 63, None)  # 64 uniform bits each
    return words.view(torch.int16)[:n].view(shape) >= threshold


class Dropout16(Dropout):
    """The model's ``Dropout`` (reference: ``nn.Dropout``) with its CPU mask drawn from 16 random bits per element."""

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0 or dropout_disabled() or x.device.type != "cpu":
            return super().forward(x)
        keep = keep_mask16(x.shape, self.p)
        return x * (keep * (1.0 / (1.0 - self.p))).to(x.dtype)  # inverted dropout, the scale fused into the mask


# --------------------------------------------------------------------------- the smoothed loss
class _LabelSmoothedNLL(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: Tensor, target: Tensor, eps: float) -> Tensor:  # (N, V), (N,) -> ()
        lse = torch.logsumexp(logits, dim=-1)  # (N,)
        loss = lse - (1.0 - eps) * logits.gather(1, target[:, None]).squeeze(1) - eps * logits.mean(dim=-1)
        ctx.save_for_backward(logits, lse, target)
        ctx.eps = eps
        return loss.sum()

    @staticmethod
    def backward(ctx, grad: Tensor):
        logits, lse, target = ctx.saved_tensors
        eps, vocab = ctx.eps, logits.size(-1)
        g = torch.exp(logits - lse[:, None])  # softmax, (N, V)
        g.sub_(eps / vocab)
        g.scatter_add_(1, target[:, None], torch.full_like(lse[:, None], -(1.0 - eps)))
        return g.mul_(grad), None, None


def _real(values: Tensor, target: Tensor, pad_id: int) -> Tuple[Tensor, Tensor]:
    """(..., X), (...) -> the (N, X) rows and (N,) targets whose target is not padding."""
    values, target = values.reshape(-1, values.size(-1)), target.reshape(-1)
    keep = target != pad_id
    return (values, target) if bool(keep.all()) else (values[keep], target[keep])


def fused_label_smoothed_cross_entropy(logits: Tensor, target: Tensor, pad_id: int, eps: float = 0.1,
                                       reduction: str = "mean") -> Tensor:
    """``losses.label_smoothed_cross_entropy`` in one autograd function (logsumexp, mean, gather)."""
    check_reduction(reduction)
    logits, target = _real(logits, target, pad_id)
    total = _LabelSmoothedNLL.apply(logits, target, float(eps))
    return total / max(target.numel(), 1) if reduction == "mean" else total


class _LinearLabelSmoothedNLL(torch.autograd.Function):
    """The pre-softmax linear map and the smoothed loss together, a slab of rows at a time; the gradients for
    the hidden states and the weight are accumulated in the forward pass, backward only scales them."""

    @staticmethod
    def forward(ctx, hidden: Tensor, weight: Tensor, target: Tensor, eps: float, rows: int) -> Tensor:
        # Under autocast (train --precision bf16) the loss is float32, as autocast keeps cross_entropy: the
        # in-place softmax and the out= products need one dtype; the gradient goes back in the hidden states'.
        dtype = torch.promote_types(torch.promote_types(hidden.dtype, weight.dtype), torch.float32)
        with torch.autocast(hidden.device.type, enabled=False):
            grad_hidden, grad_weight, total = _linear_loss(hidden.to(dtype), weight.to(dtype), target, eps, rows)
        ctx.save_for_backward(grad_hidden.to(hidden.dtype), grad_weight.to(weight.dtype))
        return total

    @staticmethod
    def backward(ctx, grad: Tensor):
        grad_hidden, grad_weight = ctx.saved_tensors
        return grad_hidden * grad, grad_weight * grad, None, None, None


def _linear_loss(hidden: Tensor, weight: Tensor, target: Tensor, eps: float,
                 rows: int) -> Tuple[Tensor, Tensor, Tensor]:
    """The summed loss with its gradients for hidden and weight, ``rows`` rows of logits at a time."""
    vocab = weight.size(0)
    grad_hidden = torch.empty_like(hidden)  # (N, d)
    grad_weight = torch.zeros_like(weight)  # (V, d)
    total = hidden.new_zeros(())
    smooth = torch.full((1, 1), -(1.0 - eps), dtype=hidden.dtype, device=hidden.device)
    for start in range(0, hidden.size(0), rows):
        h, t = hidden[start:start + rows], target[start:start + rows, None]  # (n, d), (n, 1)
        logits = h @ weight.t()  # (n, V)
        mean, picked = logits.mean(dim=-1), logits.gather(1, t).squeeze(1)
        top = logits.amax(dim=-1, keepdim=True)
        probs = logits.sub_(top).exp_()  # in place: unnormalised softmax
        norm = probs.sum(dim=-1, keepdim=True)
        lse = (top + norm.log()).squeeze(1)
        total += (lse - (1.0 - eps) * picked - eps * mean).sum()
        grad = probs.div_(norm).sub_(eps / vocab)  # (n, V)
        grad.scatter_add_(1, t, smooth.expand(t.size(0), 1))
        torch.mm(grad, weight, out=grad_hidden[start:start + rows])
        grad_weight.addmm_(grad.t(), h)
    return grad_hidden, grad_weight, total


def linear_label_smoothed_cross_entropy(hidden: Tensor, weight: Tensor, target: Tensor, pad_id: int,
                                        eps: float = 0.1, rows: int = 256) -> Tensor:
    """``label_smoothed_cross_entropy(hidden @ weight.T, target, pad_id, eps)`` (mean over real tokens).

    ``hidden`` (..., d), ``weight`` (V, d) without bias, ``target`` (...); padding is dropped before the
    projection, and the logits are made ``rows`` at a time and never kept.
    """
    hidden, target = _real(hidden, target, pad_id)
    total = _LinearLabelSmoothedNLL.apply(hidden, weight, target, float(eps), int(rows))
    return total / max(target.numel(), 1)


class FusedSmoothedLoss(SmoothedLoss):
    """``SmoothedLoss`` fused with a bias-free output layer (the paper's); any other layer's logits fused alone."""

    def forward(self, out, target: Tensor, pad_id: int, eps: float) -> Tensor:
        generator = out.generator
        if isinstance(generator, nn.Linear) and generator.bias is None:
            return linear_label_smoothed_cross_entropy(out.hidden, generator.weight, target, pad_id, eps)
        return fused_label_smoothed_cross_entropy(out.logits, target, pad_id, eps)


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
    return Prepared(onednn.pack(weight))


# a weight's packed copy, remade when the weight is written in place, dropped when the weight is freed
_PREPARED: WeakVersionCache[Prepared] = WeakVersionCache(lambda weight: (weight._version, weight.data_ptr()))


def prepared(weight: Tensor) -> Optional[Prepared]:
    """The float32 CPU weight packed for oneDNN, made once and remade when the weight changes.

    None where oneDNN cannot be used: another device or dtype, a PyTorch
    without oneDNN, and an inference tensor (it has no version counter to
    tell whether it changed).
    """
    if (weight.device.type != "cpu" or weight.dtype != torch.float32 or weight.is_inference()
            or not onednn.available()):
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
        return onednn.linear(hidden, ready.packed)
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
