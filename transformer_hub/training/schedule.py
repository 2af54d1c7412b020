"""The learning-rate schedule of section 5.3 ("Optimizer"), shared by the trainer and the inside views."""
from __future__ import annotations

import math


def noam_lr(step: int, d_model: int, warmup: int, factor: float) -> float:
    """lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)  (section 5.3, equation 3)."""
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def lr_factor(peak_lr: float, d_model: int, warmup: int) -> float:
    """The ``noam_lr`` factor that makes the schedule peak at ``peak_lr`` (at step ``warmup``)."""
    return peak_lr * math.sqrt(d_model) * math.sqrt(warmup)
