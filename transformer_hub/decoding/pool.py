"""Decoding on several cores: worker processes that each hold the model and decode whole batches.

The decode loop is Python between small tensor ops, so threads in one process
(``generate(..., workers=2)``) take turns for the GIL; processes do not.  A pool is a decoding
engine (``engines.py``): ``generate(model, texts, engine=pool)``.

    with DecodingPool(model, processes=2) as pool:               # from a model in memory
        hypotheses = pool.translate(lines, strategy="beam")      # or generate(model, lines, engine=pool)

    pool = DecodingPool("space/models/en-de", processes=1, wait=False)   # from a folder or a Hub repo id
    pool.generate(["A dog runs."], strategy="beam", src_lang="en", tgt_lang="de")
    pool.generate(["Ein Hund rennt."], source="space/models/multilingual", src_lang="de", tgt_lang="fr")

From a model, the parent writes it once to a temporary ``save_pretrained``
folder; from a source (a local folder, or a Hub repo id at ``revision``), this
process never loads the weights: each spawned worker loads them itself
(safetensors, strictly: nothing is unpickled from files), with ``threads``
torch threads (default: the parent's share of the cores).  A pool built from a
source tokenizes in its workers too (``generate`` runs there whole), and its
workers load further models on first use (``source=``), each once.  Batches
and results travel over pipes between these processes of ours.  Workers exit
when the pool closes or when the parent dies; a dead worker closes the pool
with a clear error.  Workers hold each model as it was when they loaded it.
Plugins (strategies, architecture parts) registered at run time in the parent
are unknown to the workers: register them through entry points instead.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import shutil
import tempfile
import threading
import time
import weakref
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from collections import OrderedDict
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import torch

from ..hub import loading
from ..registry import MODELS
from .batching import decode_in_batches, with_seed
from .config import STRATEGIES, DecodingConfig, one_per_text
from .engines import decode_batch
from .results import Hypothesis, TranslationResult

MAX_PROCESSES = 64
READY_TIMEOUT_S = 300.0  # every worker imports torch and loads the model
PER_TEXT = ("src_lang", "tgt_lang", "domain", "prefix", "constraints")  # generate options that may be given one per text
MODELS_PER_WORKER = 8  # a worker keeps the models it used last; an older one is loaded again when asked for
Key = Tuple[str, Optional[str]]  # (source, revision)
_MODELS: "OrderedDict[Key, Any]" = OrderedDict()  # in a worker: the models it loaded, least recently used first
_DEFAULT: Optional[Key] = None  # in a worker: the pool's own model
_BARRIER = None  # in a worker: where the start-up check waits for the others (inherited at spawn)


def exit_with_parent(parent: int) -> None:
    """Leave when the parent is gone: a parent stopped by a signal runs no clean-up, and an orphaned
    worker would keep its memory (and its threads' CPU) forever."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _start_worker(default: Key, threads: int, parent: int, barrier) -> None:
    global _DEFAULT, _BARRIER
    torch.set_num_threads(threads)
    threading.Thread(target=exit_with_parent, args=(parent,), daemon=True, name="exit-with-parent").start()
    _DEFAULT, _BARRIER = default, barrier  # loaded by the first task: a model that cannot load fails a task, not the pool


def _model(key: Optional[Key] = None):
    key = key or _DEFAULT
    if key not in _MODELS:
        with loading(*key):  # any failure: hub.ModelLoadError naming the folder or repo id
            model = MODELS.get("transformer").from_pretrained(key[0], revision=key[1]).eval()
        while len(_MODELS) >= MODELS_PER_WORKER:
            _MODELS.popitem(last=False)
        _MODELS[key] = model
    _MODELS.move_to_end(key)
    return _MODELS[key]


def _ready() -> int:
    try:
        _model()
    except BaseException:
        _BARRIER.abort()  # the other workers stop waiting for this one
        raise
    _BARRIER.wait(READY_TIMEOUT_S)  # n tasks that wait for each other: they run on n different workers
    return os.getpid()


def _load(key: Key) -> int:
    _model(key)
    return os.getpid()


def _decode_in_worker(rows: List[List[int]], caps: List[int], config: DecodingConfig,
                      prefixes=None, constraints=None) -> List[List[Hypothesis]]:
    return decode_batch(_model(), rows, caps, config, prefixes, constraints)


def _generate_in_worker(key: Optional[Key], texts: List[str], config: Optional[DecodingConfig],
                        options: Dict[str, Any]) -> List[TranslationResult]:
    from .api import generate

    return generate(_model(key), texts, config, **options)


def _call_in_worker(key: Optional[Key], function, args: tuple, kwargs: Dict[str, Any]):
    return function(_model(key), *args, **kwargs)


def _check_counts(processes, threads) -> int:
    if isinstance(processes, bool) or not isinstance(processes, int) or not 1 <= processes <= MAX_PROCESSES:
        raise ValueError(f"processes must be an integer between 1 and {MAX_PROCESSES}, got {processes!r}")
    threads = threads if threads is not None else max(1, torch.get_num_threads() // processes)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    return threads


class DecodingPool:
    """``processes`` worker processes, each with a copy of the model.

    ``model``: a ``Transformer``, or where to load one from (a ``save_pretrained`` folder, or a Hub repo id
    at ``revision``).  With ``wait=True`` the constructor returns once every worker has loaded it (a model
    that cannot load raises here); with ``wait=False`` the workers start and load it in the background, and
    the first call waits for them (a load failure then fails that call, and the pool keeps serving others).
    """

    constrains = True  # as an engine it honours ``constraints=`` (its workers run the PyTorch search)

    def __init__(self, model: Union[Any, str, os.PathLike], processes: int = 2, threads: Optional[int] = None, *,
                 revision: Optional[str] = None, wait: bool = True) -> None:
        threads = _check_counts(processes, threads)
        from_source = isinstance(model, (str, os.PathLike))
        if not from_source and any(p.device.type != "cpu" for p in model.parameters()):
            raise ValueError("a DecodingPool decodes on the CPU: move the model there first (model.cpu())")
        if from_source and revision is not None and os.path.isdir(model):
            raise ValueError(f"revision={revision!r} applies to Hub repo ids, not to the local folder {model}")
        self.model = None if from_source else model
        self.processes, self.threads = processes, threads
        self._state: Dict[str, Any] = {"executor": None}  # what close() stops; the finalizer must not hold self
        # a model in memory goes to a temporary folder the workers load (removed on close)
        self.folder = None if from_source else tempfile.mkdtemp(prefix="transformer_hub-pool-")
        self.source = os.fspath(model) if from_source else self.folder
        self.revision = revision if from_source else None
        self._cleanup = weakref.finalize(self, _shut_down, self._state, self.folder)
        try:
            if self.model is not None:
                self.model.save_pretrained(self.folder)
            self._start(wait)
        except BaseException as exc:
            self.close()
            if isinstance(exc, BrokenProcessPool):
                raise RuntimeError("the decoding workers could not start (see their error above)") from exc
            raise

    def _start(self, wait: bool) -> None:
        context = multiprocessing.get_context("spawn")
        barrier = context.Barrier(self.processes) if wait else None
        self._state["executor"] = executor = ProcessPoolExecutor(
            self.processes, mp_context=context, initializer=_start_worker,
            initargs=((self.source, self.revision), self.threads, os.getpid(), barrier))
        if wait:
            for future in [executor.submit(_ready) for _ in range(self.processes)]:
                future.result(READY_TIMEOUT_S)
        else:
            self.preload()

    def _executor(self) -> ProcessPoolExecutor:
        executor = self._state["executor"]
        if executor is None:
            raise RuntimeError("this DecodingPool is closed")
        return executor

    def _broken(self) -> RuntimeError:
        self.close()
        return RuntimeError("a decoding worker stopped unexpectedly; this pool is closed: start a new one")

    def preload(self, source: Optional[Union[str, os.PathLike]] = None, revision: Optional[str] = None) -> List[Future]:
        """Start loading a model (default: the pool's own) in the background; the futures give the worker pids.

        One load per worker is submitted; where two land on the same worker the other loads on first use.
        """
        key = (os.fspath(source), revision) if source is not None else (self.source, self.revision)
        executor = self._executor()
        try:  # a worker that died while the pool was idle breaks the executor: submit raises
            return [executor.submit(_load, key) for _ in range(self.processes)]
        except BrokenProcessPool as exc:
            raise self._broken() from exc

    def map(self, rows: Iterable[List[List[int]]], caps: Iterable[List[int]], config: DecodingConfig,
            prefixes: Optional[Iterable[Optional[list]]] = None,
            constraints: Optional[Iterable[Optional[list]]] = None) -> Iterator[List[List[Hypothesis]]]:
        """Decode batches (id rows, their output caps, optionally their forced prefixes and constraints) in the
        workers, in order."""
        executor = self._executor()
        rows, caps = list(rows), list(caps)
        prefixes = list(prefixes) if prefixes is not None else [None] * len(rows)
        constraints = list(constraints) if constraints is not None else [None] * len(rows)
        try:
            yield from executor.map(_decode_in_worker, rows, caps, [config] * len(rows), prefixes, constraints)
        except BrokenProcessPool as exc:
            raise self._broken() from exc

    def check(self, config: DecodingConfig, workers: int = 1) -> None:
        """As an engine: ``ValueError`` for what the pool cannot do (the pool's processes are its parallelism)."""
        if workers != 1:
            raise ValueError(f"a DecodingPool decodes in its {self.processes} processes: pass workers=1 with it")
        STRATEGIES.get(config.strategy)  # an unknown name fails here, before any work
        self._executor()

    def decode(self, model, sources: Sequence[List[int]], caps: Sequence[int], config: DecodingConfig,
               progress: bool = False, prefixes: Optional[Sequence] = None, workers: int = 1,
               constraints: Optional[Sequence] = None) -> List[List[Hypothesis]]:
        """As an engine (``generate(model, texts, engine=pool)``): the batches are decoded by the workers."""
        if self.model is not model:
            raise ValueError("this DecodingPool holds a different model: build the pool from the model you decode with")
        self.check(config, workers)
        config = with_seed(config)
        return decode_in_batches(model, list(sources), list(caps), config,
                                 lambda rows, caps_of, prefixes_of, constraints_of: self.map(
                                     rows, caps_of, config, prefixes_of, constraints_of),
                                 progress, list(prefixes) if prefixes is not None else None,
                                 f"decoding ({config.strategy}, {self.processes} processes)",
                                 list(constraints) if constraints is not None else None)

    def generate(self, texts: Sequence[str], config: Optional[DecodingConfig] = None, *, progress: bool = False,
                 source: Optional[Union[str, os.PathLike]] = None, revision: Optional[str] = None,
                 **options) -> List[TranslationResult]:
        """``generate(model, texts, config, **options)`` decoded by the workers.

        A pool built from a model in memory tokenizes here and decodes its batches in the workers; a pool
        built from a source, or a call with ``source=`` (another folder or repo id, loaded by the workers on
        first use), runs ``generate`` in the workers whole, the texts split evenly between them.
        """
        from .api import generate

        if self.model is not None and source is None:
            return generate(self.model, texts, config, progress=progress, engine=self, **options)
        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings; wrap a single sentence in a list")
        texts = list(texts)
        key = (os.fspath(source), revision) if source is not None else None
        size = max(1, math.ceil(len(texts) / self.processes))
        # per-text options (languages, prefixes as lists) follow their texts into the chunks
        # (checked here against the whole call: a chunk would count its own texts)
        per_text = {k: one_per_text(v, len(texts), k) for k, v in options.items()
                    if k in PER_TEXT and isinstance(v, (list, tuple))}
        executor, futures = self._executor(), []
        try:  # submit too: a worker that died while the pool was idle breaks the executor
            for start in range(0, max(len(texts), 1), size):
                chunk_options = {**options, **{k: list(v[start:start + size]) for k, v in per_text.items()}}
                futures.append(executor.submit(_generate_in_worker, key, texts[start:start + size], config,
                                               chunk_options))
            return [result for future in futures for result in future.result()]
        except BrokenProcessPool as exc:
            raise self._broken() from exc

    def call(self, function, *args, source: Optional[Union[str, os.PathLike]] = None, revision: Optional[str] = None,
             **kwargs):
        """``function(model, *args, **kwargs)`` in a worker, on the pool's model (or the one at ``source``).

        ``function`` must be importable by name (a module-level function, as ``pickle`` sends it), and its
        arguments and result picklable: e.g. ``pool.call(transformer_hub.inside.attention_maps, "A dog.")``.
        """
        key = (os.fspath(source), revision) if source is not None else None
        try:
            return self._executor().submit(_call_in_worker, key, function, args, kwargs).result()
        except BrokenProcessPool as exc:
            raise self._broken() from exc

    def translate(self, texts: Sequence[str], strategy: str = "greedy", **options) -> List[str]:
        """The best output string for each text, decoded by the workers."""
        return [r.text for r in self.generate(texts, strategy=strategy, **options)]

    @property
    def closed(self) -> bool:
        return self._state["executor"] is None

    def close(self) -> None:
        """Stop the workers and remove the temporary model folder; idempotent."""
        self._cleanup()

    def __enter__(self) -> "DecodingPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _shut_down(state: dict, folder: Optional[str]) -> None:
    executor, state["executor"] = state["executor"], None
    if executor is not None:
        executor.shutdown(wait=True, cancel_futures=True)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
