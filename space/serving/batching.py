"""Adaptive micro-batching: concurrent requests with the same model and options share one ``generate`` call.

At low load a request runs at once (no added latency).  While ``max_parallel`` decodes are busy, later
requests wait; when a slot frees up, the next waiting request takes every request queued for its
(model, options) key, up to ``max_sentences`` sentences, and decodes them as one batch.  A sentence's
output does not depend on the requests it shares a call with, to the extent the library's batched
decoding promises (``transformer_hub.decoding``: the same search, padding masked; floating-point sums
over a batch may round differently, which can flip a near-tie).  Sampling is never merged (its key is
unique per request): one call has one seed, and each request asks for its own.  A merged call that fails
on bad input (a ``ValueError``) is decoded again request by request, so only the bad one fails.  Keys are
served first come, first served (by their oldest waiting request), and ``max_waiting`` bounds the queue
that the page's events and the REST routes share: beyond it a request fails at once with ``QueueFull``.
"""
from __future__ import annotations

import itertools
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Deque, Dict, Hashable, List, Optional, Sequence


class QueueFull(RuntimeError):
    """The decode queue holds ``max_waiting`` requests already: the caller should answer "busy, retry"."""


@dataclass
class _Item:
    sentences: List[str]
    order: int = 0
    results: Optional[list] = None
    error: Optional[BaseException] = None
    done: bool = False


@dataclass
class MicroBatcher:
    max_parallel: int = 1       # decodes running at once
    max_sentences: int = 64     # sentences merged into one call
    max_waiting: Optional[int] = None  # requests waiting at most (None: no bound); more raise QueueFull
    _cond: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _queues: Dict[Hashable, Deque[_Item]] = field(default_factory=dict, repr=False)
    _running: int = 0
    _unique: "itertools.count" = field(default_factory=itertools.count, repr=False)
    calls: int = 0              # generate calls made (for tests and benchmarks)
    merged: int = 0             # requests that shared a call with an earlier one

    def unique_key(self) -> Hashable:
        return ("unique", next(self._unique))

    def run(self, key: Hashable, decode: Callable[[List[str]], list], sentences: Sequence[str]) -> list:
        """``decode(sentences)`` for this request, possibly merged with others of the same ``key``."""
        with self._cond:
            if self.max_waiting is not None and self._waiting() >= self.max_waiting:
                raise QueueFull(f"the decode queue is full ({self.max_waiting} requests waiting)")
            item = _Item(list(sentences), next(self._unique))
            self._queues.setdefault(key, deque()).append(item)
            self._cond.notify_all()  # whoever waits on the queues (wait_until) sees the new request
            while not item.done:
                queue = self._queues.get(key)
                # first come, first served across keys: the key whose oldest request came first goes next, so
                # a stream of requests with one set of options cannot starve those with another
                if self._running < self.max_parallel and queue and self._next_key() == key:
                    batch = self._take(key, queue)
                    self._running += 1
                    self._cond.notify_all()  # with a free slot left, the next key's request may start now
                    self.calls += 1
                    self.merged += len(batch) - 1
                    self._cond.release()
                    try:
                        self._decode(decode, batch)
                    finally:
                        self._cond.acquire()
                        self._running -= 1
                        for done in batch:
                            done.done = True
                        self._cond.notify_all()
                else:
                    self._cond.wait()
        if item.error is not None:
            raise item.error
        return item.results

    @property
    def waiting(self) -> int:
        """Requests queued and not yet taken into a decode."""
        with self._cond:
            return self._waiting()

    def _waiting(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    def _next_key(self) -> Hashable:
        return min(self._queues, key=lambda k: self._queues[k][0].order)

    def wait_until(self, predicate: Callable[["MicroBatcher"], bool], timeout: Optional[float] = None) -> bool:
        """Block until ``predicate(self)`` holds, checked at every change of the queues; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout)

    def _take(self, key: Hashable, queue: Deque[_Item]) -> List[_Item]:
        batch = [queue.popleft()]
        count = len(batch[0].sentences)
        while queue and count + len(queue[0].sentences) <= self.max_sentences:
            count += len(queue[0].sentences)
            batch.append(queue.popleft())
        if not queue:
            del self._queues[key]
        return batch

    @staticmethod
    def _decode(decode: Callable[[List[str]], list], batch: List[_Item]) -> None:
        sentences = [s for item in batch for s in item.sentences]
        try:
            results = decode(sentences)
            if len(results) != len(sentences):
                raise RuntimeError(f"decoding returned {len(results)} results for {len(sentences)} sentences")
        except ValueError as exc:  # one request's bad input (e.g. a prefix too long) must not fail those merged with it
            if len(batch) > 1:
                for item in batch:
                    MicroBatcher._decode(decode, [item])
                return
            batch[0].error = exc
            return
        except BaseException as exc:  # noqa: BLE001 - handed to every request of the batch
            for item in batch:
                item.error = exc
            return
        start = 0
        for item in batch:
            item.results = results[start:start + len(item.sentences)]
            start += len(item.sentences)
