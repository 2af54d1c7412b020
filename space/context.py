"""What every tab's ``render`` receives: the model store, the limits, the examples."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

from .examples import EXAMPLES
from .limits import Limits
from .models_store import ModelStore


@dataclass
class SpaceContext:
    store: ModelStore
    limits: Limits = field(default_factory=Limits)
    examples: List[str] = field(default_factory=lambda: list(EXAMPLES))

    @property
    def model_names(self) -> List[str]:
        return self.store.names()

    @property
    def default_model(self):
        return self.store.default()
