"""Every decode of the Space: ``transformer_hub``'s ``DecodingPool`` from the models' sources, behind a micro-batcher.

The server process never loads weights: one worker process (its own interpreter, so the decode loop
does not take turns for the GIL with Gradio's threads; one torch thread, the other core serves
Gradio) loads each model from its folder or Hub repo on first use, the default one as soon as the
Space starts.  Concurrent requests of the same model and options wait in the ``MicroBatcher`` and are
decoded as one ``generate`` call (their languages and prefixes travel per sentence).  If the worker
dies, the request that was running fails with a clear error and the next one starts a fresh pool.
"""
from __future__ import annotations

import threading
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple

from transformer_hub.decoding import DecodingConfig, DecodingPool, TranslationResult

from .batching import MicroBatcher
from .model_store import ModelStore

PROCESSES = 1  # measured: two decoding processes served fewer requests/s on 2 cores than one with merged batches


class Request(NamedTuple):
    """One sentence to decode, with its direction, forced prefix, the target phrases it must contain and its
    domain (the domain tag of a model trained with them; None for the others)."""

    text: str
    src_lang: Optional[str] = None
    tgt_lang: Optional[str] = None
    prefix: Optional[str] = None
    constraints: Tuple[str, ...] = ()
    domain: Optional[str] = None


def _common(values: List):
    """One value for the whole call when every sentence has the same, else the per-sentence list."""
    return values[0] if len(set(values)) == 1 else values


class Decoder:
    """``generate`` for the Space: in a ``DecodingPool`` worker, requests merged by a ``MicroBatcher``."""

    def __init__(self, store: ModelStore, threads: int = 1, batcher: Optional[MicroBatcher] = None) -> None:
        self.store, self.threads = store, threads
        self.batcher = batcher if batcher is not None else MicroBatcher(max_parallel=1)
        self._pool: Optional[DecodingPool] = None
        self._lock = threading.Lock()

    def pool(self) -> DecodingPool:
        """The worker pool, started (again) when there is none or the last one's worker died."""
        with self._lock:
            if self._pool is None or self._pool.closed:
                spec = self.store.spec(self.store.default())
                # wait=False: the worker starts and loads the default model in the background
                self._pool = DecodingPool(spec.source, processes=PROCESSES, threads=self.threads,
                                          revision=spec.revision, wait=False)
            return self._pool

    def start(self) -> None:
        """Start the worker and load the default model now, so that the first visitor does not wait for it."""
        if self.store.default() is not None:
            self.pool()

    def generate(self, name: str, requests: Sequence[Request], config: DecodingConfig, engine: str = "pytorch",
                 cancelled: Optional[Callable[[], bool]] = None) -> List[TranslationResult]:
        """Decode ``requests`` with model ``name`` (sharing a call with concurrent requests of the same options, a
        large request in parts: ``MicroBatcher``); ``batching.Cancelled`` once ``cancelled()`` (the client left)."""
        spec = self.store.spec(name)

        def decode(batch: List[Request]) -> List[TranslationResult]:
            prefixes = [r.prefix or None for r in batch]
            # a sentence without constraints is decoded as plain beam search, whatever the others of its batch
            constraints = [list(r.constraints) for r in batch]
            domains = {"domain": _common([r.domain for r in batch])} if any(r.domain for r in batch) else {}
            return self.pool().generate(
                [r.text for r in batch], config, source=spec.source, revision=spec.revision, engine=engine,
                src_lang=_common([r.src_lang for r in batch]), tgt_lang=_common([r.tgt_lang for r in batch]),
                prefix=None if not any(prefixes) else prefixes, constraints=constraints if any(constraints) else None,
                **domains)

        # sampling: a call without a seed draws one for all its texts, and a sentence's stream is keyed on its
        # source and that seed, so two users' identical texts merged in one call would get the same samples
        key = self.batcher.unique_key() if config.strategy == "sample" else (spec.name, repr(config), engine)
        return self.batcher.run(key, decode, list(requests), cancelled)

    def call(self, name: str, function, *args, **kwargs):
        """``function(model, *args, **kwargs)`` on model ``name`` in the decoding worker (``DecodingPool.call``)."""
        spec = self.store.spec(name)
        return self.pool().call(function, *args, source=spec.source, revision=spec.revision, **kwargs)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
