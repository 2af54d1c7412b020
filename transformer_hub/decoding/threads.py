"""Decoding threads: ``generate(..., workers=N)`` decodes N batches at once, each thread with its share of the cores.

Where the thread count is set, precisely.  PyTorch's Linux and Windows wheels run intra-op
parallelism on OpenMP, whose thread count is per calling thread: a thread takes the process default
(``torch.set_num_threads``) at its first parallel operation (or ``torch.get_num_threads()``) and keeps its
own count afterwards.  So each
decoding thread sets its own share when it starts, and no thread that already runs (the caller, a
training loop in another thread) sees its count change.  ``torch.set_num_threads`` also moves the
default for threads that start later; it is put back when the call ends, so only a thread started
*during* the call inherits a share.  On a build with another parallel backend the count is process-wide:
there the decoding threads leave it alone and share the caller's threads.
"""
from __future__ import annotations

import contextlib
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import torch

MAX_WORKERS = 64


@functools.lru_cache(maxsize=None)
def per_thread_count() -> bool:
    """Whether this PyTorch keeps an intra-op thread count per calling thread (its OpenMP backend)."""
    return "ATen parallel backend: OpenMP" in torch.__config__.parallel_info()


def check_workers(workers) -> None:
    """``workers`` is a thread count: an integer in [1, MAX_WORKERS]."""
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        hint = " (pass a DecodingPool as engine=, not workers=)" if hasattr(workers, "decode") else ""
        raise ValueError(f"workers must be an integer between 1 and {MAX_WORKERS}, got {workers!r}{hint}")


@contextlib.contextmanager
def decoding_threads(threads: int) -> Iterator[ThreadPoolExecutor]:
    """An executor of ``threads`` decoding threads, each with ``torch.get_num_threads() // threads`` intra-op threads."""
    caller = torch.get_num_threads()
    share = max(1, caller // threads)
    initializer = torch.set_num_threads if per_thread_count() else None
    executor = ThreadPoolExecutor(threads, thread_name_prefix="transformer_hub-decode", initializer=initializer,
                                  initargs=(share,) if initializer else ())
    try:
        yield executor
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        if per_thread_count():
            torch.set_num_threads(caller)  # the default for later threads; this thread's own count is unchanged
