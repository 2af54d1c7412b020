"""The training recipe of a model, from its own files: the schedule (section 5.3) and label smoothing (5.4).

The schedule is the trainer's own ``scheduled_lr`` with the model's d_model and the warm-up, peak and
cool-down its card records; the logged curves are its ``metrics.jsonl``; the smoothed target is the loss's own
``smoothed_targets``.  No weights are needed: ``training_recipe`` takes the config, the card's training
facts and the metrics records.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

import torch

from ..model.losses import smoothed_targets
from ..training.schedule import lr_factor, scheduled_lr

POINTS = 400  # schedule points drawn


@dataclass
class RecipeView:
    """``steps`` / ``lr``: the schedule; ``logged``: the trainer's records ("train": step, loss, lr;
    "val": step, val_loss) as lists per key; ``warmup``, ``peak_lr``, ``factor``, ``d_model``,
    ``updates`` (the model's last update), ``label_smoothing`` (epsilon).  A card without a warm-up or a peak
    rate gives no schedule (``warmup``, ``peak_lr``, ``factor`` None; ``steps``, ``lr`` empty): its logged
    curves are all there is; ``missing`` names what it lacks."""

    d_model: int
    warmup: Optional[int]
    peak_lr: Optional[float]
    factor: Optional[float]
    updates: int
    label_smoothing: Optional[float]
    steps: List[int]
    lr: List[float]
    logged: Dict[str, Dict[str, List[float]]] = field(default_factory=dict)
    missing: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def _fact(training: Mapping[str, Any], key: str, kind):
    value = training.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    return kind(value)


def training_recipe(config, training: Mapping[str, Any], metrics: Sequence[Mapping[str, Any]] = (),
                    points: int = POINTS) -> RecipeView:
    """The schedule ``factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)`` of a model and its curves.

    ``training``: the card's training facts (``warmup``, ``peak_lr``, ``updates``, ``label_smoothing``, and
    ``cooldown_updates`` where the run ended on one);
    ``metrics``: its ``metrics.jsonl`` records (``MetricsLog(path).read()``).
    """
    warmup, peak = _fact(training, "warmup", int), _fact(training, "peak_lr", float)
    updates = int(training.get("updates") or 0) or max((int(r.get("step", 0)) for r in metrics), default=0)
    smoothing = training.get("label_smoothing")
    smoothing = float(smoothing) if isinstance(smoothing, (int, float)) and not isinstance(smoothing, bool) else None
    missing = [name for name, value in (("warm-up", warmup), ("peak learning rate", peak)) if value is None]
    if missing:
        return RecipeView(d_model=config.d_model, warmup=warmup, peak_lr=peak, factor=None, updates=updates,
                          label_smoothing=smoothing, steps=[], lr=[], logged=_curves(metrics), missing=missing)
    last = max(updates, 2 * warmup, 2)
    stride = max(1, last // points)
    steps = sorted(set(range(1, last + 1, stride)) | {warmup, last})
    factor = lr_factor(peak, config.d_model, warmup)
    cooldown = _fact(training, "cooldown_updates", int) or 0
    return RecipeView(d_model=config.d_model, warmup=warmup, peak_lr=peak, factor=factor, updates=updates,
                      label_smoothing=smoothing, steps=steps,
                      lr=[scheduled_lr(s, config.d_model, warmup, factor, updates, cooldown) for s in steps],
                      logged=_curves(metrics))


def _curves(metrics: Sequence[Mapping[str, Any]]) -> Dict[str, Dict[str, List[float]]]:
    keys = {"train": ("step", "loss", "lr"), "val": ("step", "val_loss")}
    curves: Dict[str, Dict[str, List[float]]] = {kind: {k: [] for k in names} for kind, names in keys.items()}
    for record in metrics:
        names = keys.get(record.get("kind"))
        if names and all(isinstance(record.get(k), (int, float)) for k in names):
            for k in names:
                curves[record["kind"]][k].append(record[k])
    return curves


@dataclass
class SmoothedTarget:
    """The label-smoothed target for one token next to the one-hot one (section 5.4).

    ``distribution`` (V,): ``1 - epsilon + epsilon / V`` on ``token``, ``epsilon / V`` on every other id.
    """

    token: int
    vocab_size: int
    epsilon: float
    distribution: torch.Tensor

    @property
    def on_target(self) -> float:
        return float(self.distribution[self.token])

    @property
    def elsewhere(self) -> float:
        return self.epsilon / self.vocab_size

    def to_dict(self) -> Dict[str, Any]:
        return {"token": self.token, "vocab_size": self.vocab_size, "epsilon": self.epsilon,
                "on_target": self.on_target, "elsewhere": self.elsewhere, "one_hot_on_target": 1.0,
                "total": float(self.distribution.double().sum())}


def smoothed_target(token: int, vocab_size: int, epsilon: float) -> SmoothedTarget:
    """The loss's smoothed target distribution for ``token`` (``losses.smoothed_targets``)."""
    if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < vocab_size:
        raise ValueError(f"token must be an id in [0, {vocab_size}), got {token!r}")
    dist = smoothed_targets(torch.tensor(token), vocab_size, float(epsilon))
    return SmoothedTarget(token=token, vocab_size=vocab_size, epsilon=float(epsilon), distribution=dist)
