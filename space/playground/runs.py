"""One playground training at a time per server; the others wait in line and see their place.

The ``PlaygroundRunner``'s own thread trains the jobs in order, each run in a ``TrainingProcess`` (its
own interpreter, one torch thread), and puts every event in the job's ``updates`` queue.  A visitor's
stream reads that queue and marks the job ``seen``; a job not read for ``abandoned_seconds`` (the
visitor closed the page, lost the connection) is stopped, as is one whose visitor pressed Stop.  The
trained models of the last few sessions are kept for "try your own input".
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from transformer_hub.playground import RunConfig, TrainingProcess

logger = logging.getLogger(__name__)
MAX_WAITING = 8          # jobs in line (the running one included) before "busy, try later"
ABANDONED_SECONDS = 15.0  # a stream that has not read its job for this long has gone
STOP_GRACE_SECONDS = 10.0  # a stopped run that has not finished by then is ended
KEPT_SESSIONS = 32        # sessions whose trained models are kept for "try your own input"


@dataclass
class Job:
    """One visitor's request: one run, or two (A and B) trained one after the other on the same seed."""

    session: str
    configs: List[RunConfig]
    updates: "queue.Queue[Tuple[str, int, object]]" = field(default_factory=queue.Queue)
    stop: threading.Event = field(default_factory=threading.Event)
    seen: float = field(default_factory=time.monotonic)

    def abandoned(self, limit: float) -> bool:
        return time.monotonic() - self.seen > limit


class PlaygroundRunner:
    """A line of jobs served one at a time by a background thread."""

    def __init__(self, threads: int = 1, max_waiting: int = MAX_WAITING, abandoned_seconds: float = ABANDONED_SECONDS,
                 process: Callable[..., TrainingProcess] = TrainingProcess) -> None:
        self.threads, self.max_waiting, self.abandoned_seconds = threads, max_waiting, abandoned_seconds
        self._process = process
        self._lock = threading.Condition()
        self._line: List[Job] = []  # the first one trains
        self._models: "OrderedDict[str, List[Tuple[RunConfig, object, int]]]" = OrderedDict()
        self._thread: Optional[threading.Thread] = None

    def submit(self, session: str, configs: List[RunConfig]) -> Job:
        """Put a job in line; ``ValueError`` if this session has one already or the line is full."""
        with self._lock:
            if any(job.session == session for job in self._line):
                raise ValueError("a run of yours is already training or waiting: press Stop first")
            if len(self._line) >= self.max_waiting:
                raise ValueError(f"the playground is busy ({len(self._line)} runs in line); try again in a minute")
            job = Job(session, list(configs))
            self._line.append(job)
            self._models.pop(session, None)  # a new run replaces the models of the last one
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="playground-runner", daemon=True)
                self._thread.start()
            self._lock.notify_all()
        return job

    def position(self, job: Job) -> int:
        """0: training; n > 0: n jobs ahead of it; -1: no longer in line."""
        with self._lock:
            return self._line.index(job) if job in self._line else -1

    def stop(self, session: str) -> bool:
        """Stop this session's job (a waiting one leaves the line); True if there was one."""
        with self._lock:
            jobs = [job for job in self._line if job.session == session]
            for job in jobs:
                job.stop.set()
                if self._line.index(job) > 0:
                    self._line.remove(job)
                    job.updates.put(("end", -1, None))
            return bool(jobs)

    def in_line(self) -> int:
        """Jobs training or waiting."""
        with self._lock:
            return len(self._line)

    def models(self, session: str) -> List[Tuple[RunConfig, object, int]]:
        """The (config, trained model, steps trained) of this session's last job, A first."""
        with self._lock:
            return list(self._models.get(session, []))

    def _next(self) -> Job:
        with self._lock:
            while True:
                for job in list(self._line):  # a waiting visitor who left gives up their place
                    if job is not (self._line[0] if self._line else None) and job.abandoned(self.abandoned_seconds):
                        self._line.remove(job)
                if self._line:
                    return self._line[0]
                self._lock.wait()

    def _serve(self) -> None:
        while True:
            job = self._next()
            try:
                for index, config in enumerate(job.configs):
                    gone = job.stop.is_set() or job.abandoned(self.abandoned_seconds)
                    if gone or not self._train(job, index, config):
                        break
            except Exception as exc:  # noqa: BLE001 - reported to the visitor; the runner goes on
                logger.exception("playground run failed")
                job.updates.put(("error", -1, f"{type(exc).__name__}: {exc}"))
            finally:
                job.updates.put(("end", -1, None))
                with self._lock:
                    if job in self._line:
                        self._line.remove(job)
                    self._lock.notify_all()

    def _train(self, job: Job, index: int, config: RunConfig) -> bool:
        """Train one run of ``job``, forwarding its events; False if the job should not go on."""
        process = self._process(config, threads=self.threads)
        stopped_at: Optional[float] = None
        try:
            while process.finished is None:
                try:
                    event = process.poll(0.25)
                except RuntimeError as exc:
                    job.updates.put(("error", index, str(exc)))
                    return False
                if event is not None:
                    job.updates.put(("event", index, event))
                if stopped_at is None and (job.stop.is_set() or job.abandoned(self.abandoned_seconds)):
                    process.stop()
                    stopped_at = time.monotonic()
                if stopped_at is not None and time.monotonic() - stopped_at > STOP_GRACE_SECONDS:
                    return False
        finally:
            process.close()
        with self._lock:
            self._models.setdefault(job.session, []).append((config, process.model, process.finished.step))
            self._models.move_to_end(job.session)
            while len(self._models) > KEPT_SESSIONS:
                self._models.popitem(last=False)
        return process.finished.reason != "stopped"
