"""What every tab's ``render`` receives: the model store, the limits, the examples."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from .batching import MicroBatcher
from .decode_process import DecodeProcess
from .examples import EXAMPLES
from .limits import Limits
from .models_store import ModelStore


@dataclass
class SpaceContext:
    store: ModelStore
    limits: Limits = field(default_factory=Limits)
    examples: List[str] = field(default_factory=lambda: list(EXAMPLES))
    batcher: Optional[MicroBatcher] = field(default_factory=MicroBatcher)  # None: decode each request alone
    decode_workers: int = 8  # concurrency limit of the decoding events (beyond the batcher's slots they wait in it)
    decoder: Optional[DecodeProcess] = None  # decode in this child process; None: in the server process

    @property
    def model_names(self) -> List[str]:
        return self.store.names()

    @property
    def default_model(self):
        return self.store.default()
