"""Decoding in a child process, so that Gradio and the decode loop do not share one GIL.

The decode loop is Python between small tensor ops; in the server process it competes for the GIL
with Gradio's event loop and handler threads.  ``DecodeProcess`` runs ``generate`` in one spawned
child (its own interpreter, ``torch_threads`` intra-op threads) that loads each model once from
where the store found it (a local folder or a Hub repo id and revision).  Requests and results
travel over a pipe between these two processes of ours (pickled: nothing here reads untrusted files).
If the child dies, the request that was running fails with a clear error and the next one starts a
fresh child; if the server dies, the child exits within a second.
"""
from __future__ import annotations

import multiprocessing
import os
import threading
import weakref
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Dict, List, Optional, Sequence, Tuple

from transformer_hub.decoding import DecodingConfig, TranslationResult
from transformer_hub.decoding.pool import exit_with_parent

_MODELS: Dict[Tuple[str, Optional[str]], object] = {}  # in the child: loaded models by (source, revision)


def _start_child(torch_threads: int) -> None:
    import torch

    if torch_threads > 0:  # 0 leaves torch's default
        torch.set_num_threads(torch_threads)
    threading.Thread(target=exit_with_parent, args=(os.getppid(),), daemon=True, name="exit-with-parent").start()


def _child_generate(source: str, revision: Optional[str], texts: List[str],
                    config: DecodingConfig) -> List[TranslationResult]:
    from transformer_hub.decoding import generate

    return generate(_child_model(source, revision), texts, config)  # it decodes under torch.inference_mode


def _child_model(source: str, revision: Optional[str]):
    from transformer_hub import Transformer

    key = (source, revision)
    if key not in _MODELS:
        _MODELS[key] = Transformer.from_pretrained(source, revision=revision).eval()
    return _MODELS[key]


class DecodeProcess:
    """``generate`` in a child process (started on first use, restarted if it dies)."""

    def __init__(self, torch_threads: int = 1) -> None:
        self.torch_threads = torch_threads
        self._executor: Optional[ProcessPoolExecutor] = None
        self._lock = threading.Lock()

    def _pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                                     initializer=_start_child, initargs=(self.torch_threads,))
                weakref.finalize(self, self._executor.shutdown, wait=False, cancel_futures=True)
            return self._executor

    def preload(self, source: str, revision: Optional[str] = None) -> None:
        """Start the child and load a model there now, in the background, so the first visitor does not wait."""
        self._pool().submit(_child_model, source, revision)  # a failure shows again, with its reason, on use

    def generate(self, source: str, revision: Optional[str], texts: Sequence[str],
                 config: DecodingConfig) -> List[TranslationResult]:
        """``transformer_hub.decoding.generate`` on the model at ``source`` (@ ``revision``), in the child."""
        pool = self._pool()
        try:
            return pool.submit(_child_generate, source, revision, list(texts), config).result()
        except BrokenProcessPool as exc:
            with self._lock:
                if self._executor is pool:
                    self._executor = None
            pool.shutdown(wait=False, cancel_futures=True)
            raise RuntimeError("the decoding process stopped unexpectedly; a new one starts with the next "
                               "request") from exc

    def close(self) -> None:
        with self._lock:
            pool, self._executor = self._executor, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
