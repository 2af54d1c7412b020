"""The training loss of section 5.4: label-smoothed cross-entropy, as PyTorch computes it (``F.cross_entropy``).

This is the reference; ``kernels.FusedSmoothedLoss`` computes the same numbers in fewer passes and is
opt-in (``kernels.use_speed_kernels``).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

Tensor = torch.Tensor


def smoothed_targets(target: Tensor, vocab_size: int, eps: float) -> Tensor:
    """The distribution the smoothed loss compares the model's with: (1 - eps) on each target, eps / V everywhere.

    ``target`` (...) ids -> (..., V) float32; cross-entropy against it is ``label_smoothed_cross_entropy``.
    """
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"label smoothing must be in [0, 1], got {eps!r}")
    dist = torch.full((*target.shape, vocab_size), eps / vocab_size)
    return dist.scatter_add_(-1, target[..., None], torch.full((*target.shape, 1), 1.0 - eps))


def check_reduction(reduction: str) -> None:
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")


def label_smoothed_cross_entropy(logits: Tensor, target: Tensor, pad_id: int, eps: float = 0.1,
                                 reduction: str = "mean") -> Tensor:
    """``F.cross_entropy(logits, target, ignore_index=pad_id, label_smoothing=eps, reduction=...)``.

    ``logits`` (..., V), ``target`` (...); positions whose target is ``pad_id`` are ignored.
    ``reduction`` is ``"mean"`` (over real tokens) or ``"sum"``.
    """
    check_reduction(reduction)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index=pad_id,
                           label_smoothing=eps, reduction=reduction)


class SmoothedLoss(nn.Module):
    """The model's loss part: the decoder's logits against the targets (``BaseTransformer.forward``)."""

    def forward(self, out, target: Tensor, pad_id: int, eps: float) -> Tensor:
        """``out``: a ``DecoderOutput``; the mean over real tokens."""
        return label_smoothed_cross_entropy(out.logits, target, pad_id, eps)
