"""``TrainingConfig``: how to train, one validated dataclass (as ``DecodingConfig`` is for decoding).

The command line (``options.py``) parses into it and scripts build it directly; ``Trainer`` takes nothing
else.  Field names are the options' names (``--max-tokens`` is ``max_tokens``); bad values raise
``ValueError`` at construction, before any data is read.  A checkpoint keeps ``to_dict()`` in its
``training_state.json``.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields
from typing import Any, Dict, List, Optional

from ..config import PRESETS
from .precision import PRECISIONS


@dataclass
class TrainingConfig:
    """The options of one run; every field but ``out`` has the default of ``python -m transformer_hub train``."""

    out: str                                 # run folder: checkpoints, metrics.jsonl, plots, final model
    # data
    data_dir: Optional[List[str]] = None     # [NAME=]PATH folders of {split}.{lang}; None: the Multi30k folder
    domain_tags: bool = False                # start each source with its corpus's <domain:NAME> tag
    upsample: Optional[List[str]] = None     # NAME=N: corpus NAME's training pairs N times in every epoch
    src_lang: str = "en"
    tgt_lang: str = "de"
    langs: Optional[str] = None              # "en,de,fr": a multilingual run over every direction between them
    directions: Optional[str] = None         # with langs: only these, "en-de,de-en"
    train_split: str = "train"
    valid_split: str = "val"
    test_splits: str = "test_2016_flickr,test_2017_flickr,test_2017_mscoco"  # scored at the end, comma-separated
    train_src: Optional[str] = None          # aligned files instead of data_dir (all four together)
    train_tgt: Optional[str] = None
    valid_src: Optional[str] = None
    valid_tgt: Optional[str] = None
    limit: int = 0                           # the first N training pairs (0 = all)
    valid_limit: int = 0
    # tokenizer
    vocab_size: Optional[int] = None         # None: 10000 (a warm start: the model's)
    separate_vocab: bool = False
    tokenizer_lines: int = 0                 # > 0: the tokenizer learns from at most N lines per language and corpus
    new_vocabulary: bool = False             # with init_from: a new tokenizer, the model's tables moved onto it
    subword_sampling_alpha: float = 0.0      # > 0: re-segment the training text each epoch by sampling
    subword_sampling_side: str = "source"    # or "both"
    # model: a preset, then overrides (None: the preset's, or a warm start's)
    preset: Optional[str] = None
    init_from: Optional[str] = None          # a saved model's folder or Hub repo id to start from
    d_model: Optional[int] = None
    n_heads: Optional[int] = None
    d_ff: Optional[int] = None
    n_encoder_layers: Optional[int] = None
    n_decoder_layers: Optional[int] = None
    dropout: Optional[float] = None
    max_len: Optional[int] = None
    positional: Optional[str] = None
    norm: Optional[str] = None
    feed_forward: Optional[str] = None
    attention: Optional[str] = None
    layout: Optional[str] = None
    tag_position: Optional[str] = None
    no_share_embeddings: bool = False
    # optimisation (section 5)
    max_tokens: int = 8000                   # tokens per batch, per process
    peak_lr: float = 0.005                   # the schedule's factor is set so that lr(warmup) = peak_lr
    lr_factor: Optional[float] = None        # the factor directly (overrides peak_lr)
    warmup: int = 2000
    cooldown_updates: int = 0                # linear fall to 0 over the last K updates
    label_smoothing: float = 0.1
    speed_kernels: bool = False              # the fused loss and 16-bit dropout masks (model/kernels.py)
    precision: str = "float32"               # or "bf16" (autocast, float32 weights), "auto": bf16 where the CPU has bf16 units
    clip_norm: float = 1.0
    max_updates: int = 8000
    max_epochs: int = 1000
    max_minutes: float = 0                   # wall time summed over resumes (0 = no limit)
    seed: int = 1
    # checkpoints, evaluation, publishing
    resume: bool = False                     # continue from the newest checkpoint in out
    save_every: int = 0
    keep_last: int = 10
    average_last: int = 10
    bleu_every: int = 1
    valid_every: int = 0
    bleu_directions: int = 3
    final_beam: int = 5                      # 0 = no final evaluation
    push_to_hub: Optional[str] = None
    hub_private: bool = False
    hub_revision: Optional[str] = None
    device: str = "cpu"
    threads: int = 0                         # 0 = all cores
    name: Optional[str] = None               # the model's name on its card

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` with a one-line reason for any bad value."""
        if not isinstance(self.out, str) or not self.out:
            raise ValueError("out must name the run's folder")
        for name, low in (("limit", 0), ("valid_limit", 0), ("max_tokens", 1), ("warmup", 1), ("cooldown_updates", 0),
                          ("max_updates", 0), ("max_epochs", 0), ("seed", 0), ("save_every", 0), ("keep_last", 0),
                          ("average_last", 0), ("bleu_every", 1), ("valid_every", 0), ("bleu_directions", 1),
                          ("final_beam", 0), ("threads", 0), ("vocab_size", 1), ("tokenizer_lines", 0)):
            _at_least(self, name, low)
        for name, low, high in (("peak_lr", 0.0, None), ("lr_factor", 0.0, None), ("clip_norm", 0.0, None),
                                ("label_smoothing", None, 1.0), ("dropout", None, 1.0)):
            _between(self, name, low, high)
        for name in ("subword_sampling_alpha", "max_minutes"):
            if not math.isfinite(getattr(self, name)) or getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name, allowed in (("subword_sampling_side", ("source", "both")), ("preset", (None, *PRESETS)),
                              ("tag_position", (None, "source", "decoder")), ("precision", PRECISIONS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}, got {getattr(self, name)!r}")
        if self.new_vocabulary and not self.init_from:
            raise ValueError("new_vocabulary moves a saved model onto a new tokenizer: give init_from too")
        if self.directions and not self.langs:
            raise ValueError("directions choose among the languages of langs: give langs too")

    def replace(self, **overrides: Any) -> "TrainingConfig":
        """A validated copy with some fields changed; unknown names raise ``ValueError``."""
        unknown = sorted(set(overrides) - {f.name for f in fields(self)})
        if unknown:
            raise ValueError(f"unknown training options {unknown}")
        return dataclasses.replace(self, **overrides)

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


def _at_least(config: TrainingConfig, name: str, low: int) -> None:
    value = getattr(config, name)
    if value is None and name == "vocab_size":
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _between(config: TrainingConfig, name: str, low: Optional[float], high: Optional[float]) -> None:
    """``low < value`` (exclusive) and ``value < high`` (exclusive); ``None`` bounds are 0 inclusive / none."""
    value = getattr(config, name)
    if value is None and name in ("lr_factor", "dropout"):
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if (low is not None and value <= low) or (low is None and value < 0) or (high is not None and value >= high):
        shown = f"> {low}" if low is not None else ">= 0"
        raise ValueError(f"{name} must be {shown}" + (f" and < {high}" if high is not None else "") + f", got {value}")
