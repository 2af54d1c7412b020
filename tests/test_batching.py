"""The micro-batcher's queue: first come, first served across option sets, and bounded (space/serving/batching.py)."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

from space.serving.batching import MicroBatcher, QueueFull


def _hold_first(batcher, calls):
    """A decode function whose first call holds the only slot until ``gate`` is set."""
    started, gate = threading.Event(), threading.Event()

    def decode(texts):
        calls.append(list(texts))
        if len(calls) == 1:
            started.set()
            assert gate.wait(30)
        return list(texts)

    return decode, started, gate


def test_keys_are_served_in_the_order_their_requests_came():
    batcher = MicroBatcher(max_parallel=1)
    calls = []
    decode, started, gate = _hold_first(batcher, calls)
    threads = [threading.Thread(target=batcher.run, args=("rest", decode, ["first"]))]
    threads[0].start()
    assert started.wait(30)
    for n, (key, text) in enumerate([("page", "p1"), ("rest", "r1"), ("page", "p2"), ("other", "o1")], 1):
        threads.append(threading.Thread(target=batcher.run, args=(key, decode, [text])))
        threads[-1].start()
        assert batcher.wait_until(lambda b, n=n: b.waiting == n, timeout=30)  # queued in this order
    gate.set()
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive()
    # "page" came first (p1 takes p2 along), then "rest", then "other": no key jumps the queue
    assert calls == [["first"], ["p1", "p2"], ["r1"], ["o1"]]


def test_a_full_queue_refuses_at_once_and_takes_requests_again_once_drained():
    batcher = MicroBatcher(max_parallel=1, max_waiting=1)
    calls = []
    decode, started, gate = _hold_first(batcher, calls)
    first = threading.Thread(target=batcher.run, args=("k", decode, ["a"]))
    second = threading.Thread(target=batcher.run, args=("k", decode, ["b"]))
    first.start()
    assert started.wait(30)
    second.start()
    assert batcher.wait_until(lambda b: b.waiting == 1, timeout=30)
    with pytest.raises(QueueFull, match=r"the decode queue is full \(1 requests waiting\)"):
        batcher.run("other", decode, ["c"])
    gate.set()
    for thread in (first, second):
        thread.join(30)
    assert batcher.run("other", decode, ["d"]) == ["d"] and calls == [["a"], ["b"], ["d"]]
