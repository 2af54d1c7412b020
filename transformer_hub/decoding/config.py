"""``DecodingConfig``: how to decode, kept apart from the model's ``TransformerConfig``.

Like ``transformers``' ``GenerationConfig``: a small validated dataclass whose
fields are the options of ``generate`` / ``translate`` / the CLI.  Bad values
raise ``ValueError`` at construction, before any model runs.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields
from typing import Any, Optional, Union

from ..registry import Registry

MAX_BEAM_SIZE = 256
MAX_BATCH_SIZE = 65_536
MAX_ALTERNATIVES = 1024
# The strategy registry lives here, beside the validation that checks names against it (strategies.py,
# beam.py and plugins fill it), so this module imports nothing of the decoding package.
STRATEGIES: Registry = Registry("decoding strategy")


@dataclass
class DecodingConfig:
    """Decoding options; every field can be overridden by keyword in ``generate(..., **overrides)``.

    Lengths count *output tokens with eos included*: a sentence stops after at
    most ``min(source tokens + max_len_offset, max_length, model.target_budget)``
    tokens (the source counts its own eos; bos is not an output token).
    """

    strategy: str = "greedy"        # a name in STRATEGIES: "greedy", "beam", "sample"
    beam_size: int = 4              # beams per sentence (paper: 4)
    length_penalty: float = 0.6     # GNMT alpha in lp(Y) = ((5 + |Y|) / 6) ** alpha; 0 ranks by raw log-prob
    n_best: int = 1                 # hypotheses returned per sentence (<= beam_size for beam; samples for sample)
    max_len_offset: int = 50        # max output tokens = source tokens + 50 (paper, section 6.1)
    max_length: Optional[int] = None  # absolute cap on output tokens (eos included)
    min_len: int = 0                # eos is blocked until this many tokens were produced
    temperature: float = 1.0        # sampling only
    top_k: int = 0                  # sampling only; 0 = no top-k filter
    top_p: float = 1.0              # sampling only; 1.0 = no nucleus filter
    seed: Optional[int] = None      # sampling only; None draws one from torch's global generator
    return_attention: bool = False  # attach (layers, heads, T, S) cross-attention to every hypothesis
    batch_size: int = 128           # sentences per forward pass (sorted by length; results in input order)
    use_cache: bool = True          # False: re-run the decoder over the whole prefix each step (reference path)
    early_stopping: Union[bool, str] = False  # beam: when a sentence stops; see ``hypotheses.FinishedHypotheses``
    return_alternatives: int = 0    # K > 0: each output token's K most likely tokens with probabilities
    return_search: bool = False     # beam: attach the search trace (``results.SearchTrace``) to each result

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` with a one-line reason for any bad value."""
        if not isinstance(self.strategy, str) or self.strategy not in STRATEGIES:
            raise ValueError(f"unknown decoding strategy {self.strategy!r}; "
                             f"registered: {', '.join(STRATEGIES.names())}")
        for name, low, high in (("beam_size", 1, MAX_BEAM_SIZE), ("n_best", 1, MAX_BEAM_SIZE), ("max_len_offset", 0, None),
                                ("min_len", 0, None), ("top_k", 0, None), ("batch_size", 1, MAX_BATCH_SIZE),
                                ("return_alternatives", 0, MAX_ALTERNATIVES)):
            _integer(self, name, low, high)
        _integer(self, "max_length", 1, None, allow_none=True)
        _integer(self, "seed", -(2 ** 63), 2 ** 64 - 1, allow_none=True)
        if _number(self, "length_penalty") < 0:
            raise ValueError(f"length_penalty must be >= 0, got {self.length_penalty}")
        if _number(self, "temperature") <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if not 0.0 < _number(self, "top_p") <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        for name in ("return_attention", "use_cache", "return_search"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.early_stopping not in (True, False, "never") or not isinstance(self.early_stopping, (bool, str)):
            raise ValueError(f"early_stopping must be True, False or 'never', got {self.early_stopping!r}")
        if self.strategy == "greedy" and self.n_best != 1:
            raise ValueError("greedy decoding returns one hypothesis: use n_best=1, or strategy='beam' / 'sample'")
        if self.strategy == "beam" and self.n_best > self.beam_size:
            raise ValueError(f"n_best={self.n_best} is larger than beam_size={self.beam_size}")
        if self.return_search and self.strategy != "beam":
            raise ValueError(f"return_search traces beam search: use strategy='beam' (got {self.strategy!r})")

    def replace(self, **overrides: Any) -> "DecodingConfig":
        """A validated copy with some fields changed; unknown names raise ``ValueError``."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown decoding options {unknown}; known: {sorted(known)}")
        return dataclasses.replace(self, **overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty (Wu et al., 2016): lp(Y) = ((5 + |Y|) / 6) ** alpha."""
    return ((5.0 + length) / 6.0) ** alpha


def one_per_text(value: Any, n: int, name: str, one: str = "one", unit: str = "texts") -> list:
    """A per-text option for ``n`` texts: one value (None or a string) for all, or a list of exactly ``n``."""
    if value is None or isinstance(value, str):
        return [value] * n
    value = list(value)
    if len(value) != n:
        raise ValueError(f"{name} has {len(value)} entries for {n} {unit}: give {one}, or one per {unit[:-1]}")
    return value


def _integer(config: DecodingConfig, name: str, low: int, high: Optional[int], allow_none: bool = False) -> None:
    value = getattr(config, name)
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"between {low} and {high}"
        raise ValueError(f"{name} must be {bound}, got {value}")


def _number(config: DecodingConfig, name: str) -> float:
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)
