"""Decoding on several cores: worker processes that each hold the model and decode whole batches.

The decode loop is Python between small tensor ops, so threads in one process
(``generate(..., workers=2)``) take turns for the GIL; processes do not.

    with DecodingPool(model, processes=2) as pool:
        hypotheses = pool.translate(lines, strategy="beam")      # or generate(model, lines, workers=pool)

The parent writes the model once to a temporary ``save_pretrained`` folder;
each spawned worker loads it from there (safetensors, strictly: nothing is
unpickled from files), with ``threads`` torch threads (default: the parent's
share of the cores).  Batches and results travel over pipes between these
processes of ours.  Workers exit when the pool closes or when the parent dies.
They hold the model as it was when the pool was built (later changes to its
weights do not reach them).
Plugins (strategies, architecture parts) registered at run time in the parent
are unknown to the workers: register them through entry points instead.
"""
from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
import threading
import time
import weakref
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Iterable, Iterator, List, Optional, Sequence

import torch

from .config import DecodingConfig
from .results import Hypothesis, TranslationResult

MAX_PROCESSES = 64
READY_TIMEOUT_S = 300.0  # every worker imports torch and loads the model
_MODEL = None  # in a worker: its copy of the model
_BARRIER = None  # in a worker: where the start-up check waits for the others


def exit_with_parent(parent: int) -> None:
    """Leave when the parent is gone: a parent stopped by a signal runs no clean-up, and an orphaned
    worker would keep its memory (and its threads' CPU) forever."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _start_worker(folder: str, threads: int, parent: int, barrier) -> None:
    global _MODEL, _BARRIER
    from ..model import Transformer

    torch.set_num_threads(threads)
    threading.Thread(target=exit_with_parent, args=(parent,), daemon=True, name="exit-with-parent").start()
    _MODEL, _BARRIER = Transformer.from_pretrained(folder).eval(), barrier


def _ready() -> int:
    _BARRIER.wait(READY_TIMEOUT_S)  # n tasks that wait for each other: they run on n different workers
    return os.getpid()


def _decode_in_worker(rows: List[List[int]], caps: List[int], config: DecodingConfig) -> List[List[Hypothesis]]:
    from .api import decode_batch

    return decode_batch(_MODEL, rows, caps, config)


class DecodingPool:
    """``processes`` worker processes, each with a copy of ``model``, ready when the constructor returns."""

    def __init__(self, model, processes: int = 2, threads: Optional[int] = None) -> None:
        if isinstance(processes, bool) or not isinstance(processes, int) or not 1 <= processes <= MAX_PROCESSES:
            raise ValueError(f"processes must be an integer between 1 and {MAX_PROCESSES}, got {processes!r}")
        if any(p.device.type != "cpu" for p in model.parameters()):
            raise ValueError("a DecodingPool decodes on the CPU: move the model there first (model.cpu())")
        threads = threads if threads is not None else max(1, torch.get_num_threads() // processes)
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        self.model, self.processes, self.threads = model, processes, threads
        self._state = {"executor": None}  # what close() stops; shared with the finalizer, which must not hold self
        self.folder = folder = tempfile.mkdtemp(prefix="transformer_hub-pool-")  # the model the workers load
        self._cleanup = weakref.finalize(self, _shut_down, self._state, folder)
        try:
            model.save_pretrained(folder)
            context = multiprocessing.get_context("spawn")
            self._state["executor"] = executor = ProcessPoolExecutor(
                processes, mp_context=context, initializer=_start_worker,
                initargs=(folder, threads, os.getpid(), context.Barrier(processes)))
            for future in [executor.submit(_ready) for _ in range(processes)]:
                future.result(READY_TIMEOUT_S)
        except BaseException as exc:
            self.close()
            if isinstance(exc, BrokenProcessPool):
                raise RuntimeError("the decoding workers could not start (see their error above)") from exc
            raise

    def map(self, rows: Iterable[List[List[int]]], caps: Iterable[List[int]],
            config: DecodingConfig) -> Iterator[List[List[Hypothesis]]]:
        """Decode batches (id rows and their output caps) in the workers; results in order."""
        executor = self._state["executor"]
        if executor is None:
            raise RuntimeError("this DecodingPool is closed")
        rows, caps = list(rows), list(caps)
        try:
            yield from executor.map(_decode_in_worker, rows, caps, [config] * len(rows))
        except BrokenProcessPool as exc:
            self.close()
            raise RuntimeError("a decoding worker stopped unexpectedly; this pool is closed: start a new one") from exc

    def generate(self, texts: Sequence[str], config: Optional[DecodingConfig] = None, *, progress: bool = False,
                 **overrides) -> List[TranslationResult]:
        """``generate(self.model, texts, ...)`` decoded by the workers."""
        from .api import generate

        return generate(self.model, texts, config, progress=progress, workers=self, **overrides)

    def translate(self, texts: Sequence[str], strategy: str = "greedy", **options) -> List[str]:
        """``translate(self.model, texts, ...)`` decoded by the workers: the best output string for each text."""
        from .api import translate

        return translate(self.model, texts, strategy, workers=self, **options)

    @property
    def closed(self) -> bool:
        return self._state["executor"] is None

    def close(self) -> None:
        """Stop the workers and remove the model folder; idempotent."""
        self._cleanup()

    def __enter__(self) -> "DecodingPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _shut_down(state: dict, folder: str) -> None:
    executor, state["executor"] = state["executor"], None
    if executor is not None:
        executor.shutdown(wait=True, cancel_futures=True)
    shutil.rmtree(folder, ignore_errors=True)
