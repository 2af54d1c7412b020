"""What every tab's ``render`` receives: the model store, the decoder, the limits, the per-direction default."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from ..hosting.limits import Limits
from ..playground.runs import PlaygroundRunner
from .choice import ModelChooser
from .decoder import Decoder
from .model_store import ModelStore

# Requests admitted to the decoding handlers at once (Gradio's concurrency limit of their group): those
# beyond the decoder's one running call wait inside the micro-batcher, where concurrent requests with the
# same options are merged into one generate call; admitting them early, not in Gradio's queue, is what lets
# them share a call.  The one default; SPACE_DECODE_WORKERS changes it (space/page/demo.py).
DECODE_WORKERS = 16


@dataclass
class SpaceContext:
    store: ModelStore
    limits: Limits = field(default_factory=Limits)
    decoder: Optional[Decoder] = None  # None: built from the store with one torch thread
    decode_workers: int = DECODE_WORKERS
    chooser: Optional[ModelChooser] = None  # None: built from the store
    playground: PlaygroundRunner = field(default_factory=PlaygroundRunner)  # one training at a time

    def __post_init__(self) -> None:
        if self.decoder is None:
            self.decoder = Decoder(self.store)
        if self.chooser is None:
            self.chooser = ModelChooser(self.store)

    def close(self) -> None:
        """Stop the decoding worker and let the Playground's spare processes go (a server shutting down)."""
        self.decoder.close()
        self.playground.close_spares()

    @property
    def model_names(self) -> List[str]:
        return self.store.names()

    @property
    def default_model(self) -> Optional[str]:
        return self.store.default()
