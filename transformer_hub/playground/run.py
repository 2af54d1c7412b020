"""What one playground run is: a task, a model size, a budget and the paper's ideas as switches.

``RunConfig`` is validated on construction, before anything is allocated, so a hostile request from a
public page (``d_model=10000``, ``n_layers=1000``, a budget of 1e9 seconds, length 0, an unknown task)
is a ``ValueError`` that says what is allowed.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any, Dict, Optional

from ._compat import TransformerConfig
from .parts import NO_POSITIONS, NORMS, POSITIONS
from .tasks import VOCAB, get_task

MAX_PARAMETERS = 1_000_000  # a run must fit a shared CPU: the default size has ~0.2 M
MAX_BUDGET_SECONDS = 600.0
HEADS = (1, 2, 4, 8)
BOUNDS: Dict[str, tuple] = {  # inclusive ranges of the numeric settings
    "min_len": (1, None), "max_len": (1, None), "d_model": (8, 256), "n_layers": (1, 4), "d_ff": (8, 1024),
    "batch_size": (1, 256), "max_steps": (1, 100_000), "seed": (0, 2 ** 31 - 1), "warmup_steps": (1, 10_000),
    "report_every": (1, 1000), "eval_every": (1, 100_000), "held_out": (1, 1000),
    "budget_seconds": (0.0, MAX_BUDGET_SECONDS), "peak_lr": (0.0, 0.1), "label_smoothing": (0.0, 0.5),
    "dropout": (0.0, 0.5),
}


@dataclass(frozen=True)
class RunConfig:
    """One training run of the playground; the defaults learn *reverse* in well under a minute."""

    task: str = "reverse"
    min_len: Optional[int] = None  # source lengths; None: the task's default (3-12 digits; 3-6 for numbers)
    max_len: Optional[int] = None
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2           # encoder layers and decoder layers each
    d_ff: int = 128
    dropout: float = 0.0
    batch_size: int = 64
    budget_seconds: float = 60.0  # wall-clock limit of the training, evaluations included
    max_steps: Optional[int] = None  # None: train until the budget is spent
    seed: int = 0               # fixes the data, the held-out set and the initialisation
    positions: str = "sinusoidal"  # sinusoidal / learned / rope / none
    causal_mask: bool = True
    norm: str = "post"          # post (the paper) / pre
    residual: bool = True
    warmup: bool = True         # off: the peak learning rate from the first step, the same decay after it
    warmup_steps: int = 100
    peak_lr: float = 0.003
    label_smoothing: float = 0.1
    report_every: int = 20      # steps between training-loss reports
    eval_every: int = 100       # steps between held-out evaluations (greedy exact match, attention)
    held_out: int = 200

    def __post_init__(self) -> None:
        self._check_types()
        task = get_task(self.task)
        for name, default in zip(("min_len", "max_len"), task.lengths):
            if getattr(self, name) is None:
                object.__setattr__(self, name, default)  # frozen: filled in once, here
        for name, (low, high) in BOUNDS.items():
            value = getattr(self, name)
            high = task.max_length if name in ("min_len", "max_len") else high
            if value is not None and not low <= value <= high:
                raise ValueError(f"{name}={value!r} is out of range: it must be between {low} and {high}")
        if self.budget_seconds <= 0 or self.peak_lr <= 0:
            raise ValueError("budget_seconds and peak_lr must be greater than 0")
        if self.min_len > self.max_len:
            raise ValueError(f"min_len={self.min_len} is more than max_len={self.max_len}")
        if self.positions not in POSITIONS:
            raise ValueError(f"unknown positions {self.positions!r}; choose one of {', '.join(POSITIONS)}")
        if self.norm not in NORMS:
            raise ValueError(f"unknown norm {self.norm!r}; choose one of {', '.join(NORMS)}")
        if self.n_heads not in HEADS or self.d_model % self.n_heads:
            raise ValueError(f"n_heads={self.n_heads} must be one of {HEADS} and divide d_model={self.d_model}")
        count = self.model_config().num_parameters()  # the parts' own checks run first; nothing is allocated
        if count > MAX_PARAMETERS:
            raise ValueError(f"this model has {count:,} parameters, over the playground's cap of {MAX_PARAMETERS:,}; "
                             "make d_model, d_ff or n_layers smaller")

    def _check_types(self) -> None:
        for f in fields(self):
            value, kind = getattr(self, f.name), str(f.type)
            if kind in ("int", "Optional[int]") and not (value is None and kind != "int") and (
                    isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"{f.name} must be an integer, got {value!r}")
            if kind == "float" and (isinstance(value, bool) or not isinstance(value, (int, float))
                                    or value != value):
                raise ValueError(f"{f.name} must be a number, got {value!r}")
            if kind == "bool" and not isinstance(value, bool):
                raise ValueError(f"{f.name} must be true or false, got {value!r}")
            if kind == "str" and not isinstance(value, str):
                raise ValueError(f"{f.name} must be a string, got {value!r}")

    def model_config(self) -> TransformerConfig:
        """The project's ``TransformerConfig`` of this run (``positions="none"`` is built by ``build_model``)."""
        return TransformerConfig(
            src_vocab_size=len(VOCAB), tgt_vocab_size=len(VOCAB), d_model=self.d_model, n_heads=self.n_heads,
            d_ff=self.d_ff, n_encoder_layers=self.n_layers, n_decoder_layers=self.n_layers, dropout=self.dropout,
            max_len=2 * get_task(self.task).max_length + 2, norm=self.norm,
            positional="sinusoidal" if self.positions == NO_POSITIONS else self.positions)

    def replace(self, **changes: Any) -> "RunConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "RunConfig":
        """From parsed JSON; unknown keys are an error, not silently dropped."""
        if not isinstance(data, dict):
            raise ValueError(f"a run config must be a JSON object, got {type(data).__name__}")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown settings {unknown}; known: {', '.join(f.name for f in fields(cls))}")
        return cls(**data)
