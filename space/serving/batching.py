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

A large request does not hold the decoder for all its sentences at once: with ``part_seconds`` it is decoded in
parts of about that many seconds each (at its key's speed, measured on the key's calls so far: a costly "best"
rerank gets parts of a few sentences, a fast decode larger ones), never fewer than ``min_part`` sentences (a
"best" rerank in parts of one or two sentences costs far more CPU than in one call, in parts of four a little
more), and each next part queues again behind whatever came meanwhile, so a one-sentence request that
arrives while 48 sentences are decoded waits for one part, not the whole (and the large request, queued again
first come first served, is never starved).  A request whose ``cancelled()`` turns true (its client left) stops
there: a part still queued is dropped, a part being decoded finishes, no next part is queued, and ``Cancelled`` is
raised.
"""
from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Deque, Dict, Hashable, List, Optional, Sequence


class QueueFull(RuntimeError):
    """The decode queue holds ``max_waiting`` requests already: the caller should answer "busy, retry"."""


class Cancelled(RuntimeError):
    """The request's ``cancelled()`` turned true (its client left) before all its sentences were decoded."""


CANCEL_POLL = 0.1  # seconds between looks at a waiting request's ``cancelled()``
SPEEDS_KEPT = 256  # keys whose speed is remembered (each sampling request has a key of its own)


@dataclass(eq=False)  # one request's part: itself only (dropped by identity)
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
    part_seconds: Optional[float] = None  # about how long one part of a request holds a slot (None: no parts)
    min_part: int = 4           # sentences of a part at least (and before its key's speed is known)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    _speed: Dict[Hashable, float] = field(default_factory=dict, repr=False)  # sentences per second, per key
    _cond: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _queues: Dict[Hashable, Deque[_Item]] = field(default_factory=dict, repr=False)
    _running: int = 0
    _unique: "itertools.count" = field(default_factory=itertools.count, repr=False)
    calls: int = 0              # generate calls made (for tests and benchmarks)
    merged: int = 0             # requests that shared a call with an earlier one

    def unique_key(self) -> Hashable:
        return ("unique", next(self._unique))

    def run(self, key: Hashable, decode: Callable[[List[str]], list], sentences: Sequence[str],
            cancelled: Optional[Callable[[], bool]] = None) -> list:
        """``decode(sentences)`` for this request, possibly merged with others of the same ``key``; in parts of about
        ``part_seconds``, each queued again behind the requests that came meanwhile (the module says why);
        ``Cancelled`` once ``cancelled()`` holds between parts or while a part waits."""
        sentences, results, start = list(sentences), [], 0
        while True:
            if start and cancelled is not None and cancelled():
                raise Cancelled("the client left before its sentences were decoded")
            step = max(1, self.part_size(key) or len(sentences))
            results += self._run_part(key, decode, sentences[start:start + step], cancelled, admitted=start > 0)
            start += step
            if start >= len(sentences):
                return results

    def part_size(self, key: Hashable) -> Optional[int]:
        """Sentences of the next part of a request of ``key``: ``part_seconds`` at the key's speed, at least
        ``min_part`` (all there is before its speed is known), at most ``max_sentences``; None: no parts."""
        if self.part_seconds is None:
            return None
        with self._cond:
            speed = self._speed.get(key)
        fits = 0 if speed is None else int(speed * self.part_seconds)
        return max(1, self.min_part, min(self.max_sentences, fits))

    def _run_part(self, key: Hashable, decode: Callable[[List[str]], list], sentences: List[str],
                  cancelled: Optional[Callable[[], bool]], admitted: bool) -> list:
        """One part of a request queued and waited for (decoded by this thread when its key's turn comes);
        ``admitted``: a later part of a request already in, never refused as ``QueueFull``."""
        with self._cond:
            if not admitted and self.max_waiting is not None and self._waiting() >= self.max_waiting:
                raise QueueFull(f"the decode queue is full ({self.max_waiting} requests waiting)")
            item = _Item(sentences, next(self._unique))
            self._queues.setdefault(key, deque()).append(item)
            self._cond.notify_all()  # whoever waits on the queues (wait_until) sees the new request
            while not item.done:
                if cancelled is not None and cancelled() and self._drop(key, item):
                    raise Cancelled("the client left before its sentences were decoded")
                queue = self._queues.get(key)
                # first come, first served across keys: the key whose oldest request came first goes next, so
                # a stream of requests with one set of options cannot starve those with another
                if self._running < self.max_parallel and queue and self._next_key() == key:
                    self._serve(key, queue, decode)
                else:
                    self._cond.wait(CANCEL_POLL if cancelled is not None else None)
        if item.error is not None:
            raise item.error
        return item.results

    def _serve(self, key: Hashable, queue: Deque[_Item], decode: Callable[[List[str]], list]) -> None:
        """Take the next batch of ``key`` and decode it, the lock released meanwhile (held on entry and exit)."""
        batch = self._take(key, queue)
        self._running += 1
        self._cond.notify_all()  # with a free slot left, the next key's request may start now
        self.calls += 1
        self.merged += len(batch) - 1
        self._cond.release()
        start = self.clock()
        try:
            self._decode(decode, batch)
        finally:
            seconds = self.clock() - start
            self._cond.acquire()
            if seconds > 0 and not any(done.error for done in batch):
                self._learn(key, sum(len(done.sentences) for done in batch) / seconds)
            self._running -= 1
            for done in batch:
                done.done = True
            self._cond.notify_all()

    def _learn(self, key: Hashable, speed: float) -> None:
        """The key's speed (sentences per second), averaged with what its earlier calls measured."""
        old = self._speed.pop(key, None)
        self._speed[key] = speed if old is None else (old + speed) / 2
        while len(self._speed) > SPEEDS_KEPT:  # the key used longest ago goes
            self._speed.pop(next(iter(self._speed)))

    def _drop(self, key: Hashable, item: _Item) -> bool:
        """Take ``item`` out of its queue if it is still there (True); False once a batch has taken it."""
        queue = self._queues.get(key)
        if queue is None or item not in queue:
            return False
        queue.remove(item)
        if not queue:
            del self._queues[key]
        self._cond.notify_all()
        return True

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
