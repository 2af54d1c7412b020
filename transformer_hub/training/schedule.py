"""The learning-rate schedule of section 5.3 ("Optimizer"), shared by the trainer and the inside views.

An optional cool-down ends a run: over its last ``cooldown`` updates the rate falls linearly to zero
("warm-up, stable, decay", Hägele et al., 2024), which lets a long run that stopped short of convergence end
on a low rate without retraining from the start.
"""
from __future__ import annotations

import math


def noam_lr(step: int, d_model: int, warmup: int, factor: float) -> float:
    """lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)  (section 5.3, equation 3)."""
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def lr_factor(peak_lr: float, d_model: int, warmup: int) -> float:
    """The ``noam_lr`` factor that makes the schedule peak at ``peak_lr`` (at step ``warmup``)."""
    return peak_lr * math.sqrt(d_model) * math.sqrt(warmup)


def cooldown_scale(step: int, last: int, cooldown: int) -> float:
    """The multiplier of update ``step`` (1-based) in a run that ends at update ``last`` and cools down over
    its last ``cooldown`` updates: 1 before them, then (last - step + 1) / cooldown down to 1 / cooldown."""
    if cooldown <= 0 or last <= 0:
        return 1.0
    return min(1.0, max(0.0, (last - step + 1) / cooldown))


def scheduled_lr(step: int, d_model: int, warmup: int, factor: float, last: int = 0, cooldown: int = 0) -> float:
    """``noam_lr`` times ``cooldown_scale``: the rate of update ``step``."""
    return noam_lr(step, d_model, warmup, factor) * cooldown_scale(step, last, cooldown)
