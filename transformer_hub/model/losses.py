"""Label-smoothed cross-entropy (section 5.4), fused into one autograd function.

``F.cross_entropy(..., label_smoothing=eps)`` makes about eight passes over the
(tokens x vocabulary) logits (log-softmax, its backward, zero-filled gradients,
adds); on a CPU with a 10k vocabulary that is a third of a training step.
Here the forward is a logsumexp, a mean and a gather, and the backward builds
the gradient softmax(x) - (1 - eps) onehot - eps / V in place: same numbers,
far fewer passes.
"""
import torch

Tensor = torch.Tensor


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


def smoothed_targets(target: Tensor, vocab_size: int, eps: float) -> Tensor:
    """The distribution the smoothed loss compares the model's with: (1 - eps) on each target, eps / V everywhere.

    ``target`` (...) ids -> (..., V) float32; cross-entropy against it is ``label_smoothed_cross_entropy``.
    """
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"label smoothing must be in [0, 1], got {eps!r}")
    dist = torch.full((*target.shape, vocab_size), eps / vocab_size)
    return dist.scatter_add_(-1, target[..., None], torch.full((*target.shape, 1), 1.0 - eps))


def label_smoothed_cross_entropy(logits: Tensor, target: Tensor, pad_id: int, eps: float = 0.1,
                                 reduction: str = "mean") -> Tensor:
    """Equal to ``F.cross_entropy(logits, target, ignore_index=pad_id, label_smoothing=eps, reduction=...)``.

    ``logits`` (..., V), ``target`` (...); positions whose target is ``pad_id`` are ignored.
    ``reduction`` is ``"mean"`` (over real tokens) or ``"sum"``.
    """
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
    logits, target = logits.reshape(-1, logits.size(-1)), target.reshape(-1)
    keep = target != pad_id
    if not bool(keep.all()):
        logits, target = logits[keep], target[keep]
    total = _LabelSmoothedNLL.apply(logits, target, float(eps))
    return total / max(target.numel(), 1) if reduction == "mean" else total


class _LinearLabelSmoothedNLL(torch.autograd.Function):
    """The pre-softmax linear map and the smoothed loss together, a slab of rows at a time.

    The (tokens x vocabulary) logits are never stored: each slab's logits are
    made, turned into its loss and its gradient softmax - (1 - eps) onehot - eps/V
    while they sit in cache, and the gradients for the hidden states and the
    weight are accumulated in the forward pass; backward only scales them.
    """

    @staticmethod
    def forward(ctx, hidden: Tensor, weight: Tensor, target: Tensor, eps: float, rows: int) -> Tensor:
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
        ctx.save_for_backward(grad_hidden, grad_weight)
        return total

    @staticmethod
    def backward(ctx, grad: Tensor):
        grad_hidden, grad_weight = ctx.saved_tensors
        return grad_hidden * grad, grad_weight * grad, None, None, None


def linear_label_smoothed_cross_entropy(hidden: Tensor, weight: Tensor, target: Tensor, pad_id: int,
                                        eps: float = 0.1, rows: int = 256) -> Tensor:
    """``label_smoothed_cross_entropy(hidden @ weight.T, target, pad_id, eps)`` (mean over real tokens).

    ``hidden`` (..., d), ``weight`` (V, d) without bias, ``target`` (...).  Padding
    positions are dropped before the projection; the logits are made ``rows`` at a
    time and never kept, which saves most of the memory traffic of the largest
    matrix in a small model's training step.
    """
    hidden, target = hidden.reshape(-1, hidden.size(-1)), target.reshape(-1)
    keep = target != pad_id
    if not bool(keep.all()):
        hidden, target = hidden[keep], target[keep]
    total = _LinearLabelSmoothedNLL.apply(hidden, weight, target, float(eps), int(rows))
    return total / max(target.numel(), 1)
