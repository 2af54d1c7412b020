"""The micro-batcher's queue: first come, first served across option sets, and bounded (space/serving/batching.py)."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

from space.serving.batching import Cancelled, MicroBatcher, QueueFull


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


def parted(min_part: int, **options) -> MicroBatcher:
    """A batcher that decodes a request in parts of ``min_part`` sentences: its clock stands still, so no speed is
    ever measured to size them otherwise."""
    return MicroBatcher(max_parallel=1, part_seconds=2.0, min_part=min_part, clock=lambda: 0.0, **options)


def _start(batcher, key, decode, sentences, out, name, cancelled=None):
    """``batcher.run`` in a thread of its own; its answer (or error) lands in ``out[name]``."""
    def run():
        try:
            out[name] = batcher.run(key, decode, sentences, cancelled)
        except Exception as exc:  # noqa: BLE001 - the test looks at it
            out[name] = exc
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _join(*threads):
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive()


def test_a_one_sentence_request_is_decoded_between_the_parts_of_a_large_one():
    """48 sentences at quality best held the decoder 35 s and a one-sentence request waited 34 s behind them: the
    large one is decoded a part at a time, and the small one, come meanwhile, goes before its next part."""
    batcher, calls, out = parted(4), [], {}
    decode, started, gate = _hold_first(batcher, calls)
    big = [f"b{i}" for i in range(12)]
    threads = [_start(batcher, "best", decode, big, out, "big")]
    assert started.wait(30)  # its first part is decoding
    threads.append(_start(batcher, "fast", decode, ["small"], out, "small"))
    assert batcher.wait_until(lambda b: b.waiting == 1, timeout=30)
    gate.set()
    _join(*threads)
    assert calls == [big[:4], ["small"], big[4:8], big[8:]]
    assert out == {"big": big, "small": ["small"]}  # every sentence's result, in its request's order


def test_the_large_request_is_not_starved_by_requests_that_keep_coming():
    """Each next part queues first come, first served: a request that comes after it goes after it."""
    batcher, calls, out, threads = parted(2), [], {}, []
    started, gate = threading.Event(), threading.Event()

    def decode(texts):
        calls.append(list(texts))
        if texts == ["b0", "b1"]:
            started.set()
            assert gate.wait(30)
        if texts == ["s1"]:  # the large request's next part queued meanwhile, then another small one comes
            assert batcher.wait_until(lambda b: b.waiting == 1, timeout=30)
            threads.append(_start(batcher, "fast", decode, ["s2"], out, "s2"))
            assert batcher.wait_until(lambda b: b.waiting == 2, timeout=30)
        return list(texts)

    threads.append(_start(batcher, "best", decode, ["b0", "b1", "b2", "b3", "b4", "b5"], out, "big"))
    assert started.wait(30)
    threads.append(_start(batcher, "fast", decode, ["s1"], out, "s1"))
    assert batcher.wait_until(lambda b: b.waiting == 1, timeout=30)
    gate.set()
    _join(threads[0], threads[1])
    _join(*threads[2:])
    assert calls == [["b0", "b1"], ["s1"], ["b2", "b3"], ["s2"], ["b4", "b5"]]


def test_a_request_whose_client_left_stops_after_the_part_being_decoded():
    batcher, calls, out = parted(4), [], {}
    decode, started, gate = _hold_first(batcher, calls)
    left = threading.Event()
    thread = _start(batcher, "k", decode, [f"s{i}" for i in range(12)], out, "big", left.is_set)
    assert started.wait(30)
    left.set()  # while its first part is decoded: that part finishes, no other is queued
    gate.set()
    _join(thread)
    assert isinstance(out["big"], Cancelled) and str(out["big"]) == "the client left before its sentences were decoded"
    assert calls == [["s0", "s1", "s2", "s3"]] and batcher.waiting == 0 and batcher._running == 0


def test_a_waiting_request_whose_client_left_leaves_the_queue_undecoded():
    batcher, calls, out = parted(4), [], {}
    decode, started, gate = _hold_first(batcher, calls)
    first = _start(batcher, "k", decode, ["a"], out, "first")
    assert started.wait(30)
    left = threading.Event()
    queued = _start(batcher, "k", decode, ["gone"], out, "gone", left.is_set)
    assert batcher.wait_until(lambda b: b.waiting == 1, timeout=30)
    left.set()
    assert batcher.wait_until(lambda b: b.waiting == 0, timeout=30)  # dropped while the slot is still held
    gate.set()
    _join(first, queued)
    assert isinstance(out["gone"], Cancelled) and out["first"] == ["a"] and calls == [["a"]]


def test_a_later_part_of_an_admitted_request_is_never_refused_as_queue_full():
    batcher, calls, out = parted(1, max_waiting=1), [], {}
    decode, started, gate = _hold_first(batcher, calls)
    big = _start(batcher, "k", decode, ["a", "b"], out, "big")
    assert started.wait(30)
    other = _start(batcher, "other", decode, ["c"], out, "other")
    assert batcher.wait_until(lambda b: b.waiting == 1, timeout=30)  # the queue is full now
    gate.set()
    _join(big, other)
    assert out == {"big": ["a", "b"], "other": ["c"]} and calls == [["a"], ["c"], ["b"]]


def test_parts_hold_the_decoder_about_part_seconds_at_the_speed_each_key_was_measured_at():
    """A key's first part is ``min_part`` sentences; then as many as its calls decode in ``part_seconds`` (a fast
    decode gets large parts, at most ``max_sentences``), never fewer than ``min_part`` (a costly rerank); without
    ``part_seconds``, one call for the whole request."""
    now = [0.0]

    def decoding(seconds_each):
        def decode(texts):
            calls.append((seconds_each, len(texts)))
            now[0] += seconds_each * len(texts)
            return list(texts)
        return decode

    calls = []
    batcher = MicroBatcher(part_seconds=2.0, min_part=3, max_sentences=16, clock=lambda: now[0])
    sentences = [f"s{i}" for i in range(48)]
    assert batcher.run("mid", decoding(0.5), sentences[:12]) == sentences[:12]  # 2 sentences a second: parts of 4
    assert batcher.run("fast", decoding(0.05), sentences) == sentences  # 20 a second: parts of 40, cut to 16
    assert batcher.run("slow", decoding(2.0), sentences[:7]) == sentences[:7]  # 0.5 a second: 1 fits, 3 go
    assert calls == [(0.5, 3), (0.5, 4), (0.5, 4), (0.5, 1), (0.05, 3), (0.05, 16), (0.05, 16), (0.05, 13),
                     (2.0, 3), (2.0, 3), (2.0, 1)]
    assert batcher.part_size("mid") == 4 and batcher.part_size("slow") == 3 and batcher.part_size("never seen") == 3
    calls.clear()
    assert MicroBatcher(clock=lambda: now[0]).run("mid", decoding(0.5), sentences) == sentences
    assert calls == [(0.5, 48)]
