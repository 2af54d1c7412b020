"""One playground training at a time per server; the others wait in line and see their place.

The ``PlaygroundRunner``'s own thread trains the jobs in order, each run in a ``TrainingProcess`` (its
own interpreter, one torch thread), and puts every event in the job's ``updates`` queue.  A visitor's
stream reads that queue and marks the job ``seen``; a job not read for ``abandoned_seconds`` (the
visitor closed the page, lost the connection) is stopped, as is one whose visitor pressed Stop.  The
trained models of the last few sessions are kept for "try your own input".

Warm start: a cold ``TrainingProcess`` spends seconds importing torch and the library before its first step
(10-20 s on a busy 2-core machine), so the runner keeps ``spares`` processes that have done so and wait
(``warm()``: the tab calls it when a visitor opens the Playground; each job refills them when it ends).  A job
takes one per run (A and B) and waits until all of them are ready before A trains, so that no interpreter
importing torch competes with a run's time budget.  Spares unused for ``SPARE_IDLE_SECONDS`` are let go.
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
from transformer_hub.playground.worker import STARTUP_SECONDS

logger = logging.getLogger(__name__)
MAX_WAITING = 8          # jobs in line (the running one included) before "busy, try later"
ABANDONED_SECONDS = 15.0  # a stream that has not read its job for this long has gone
STOP_GRACE_SECONDS = 10.0  # a stopped run that has not finished by then is ended
KEPT_SESSIONS = 32        # sessions whose trained models are kept for "try your own input"
SPARES = 2                # processes kept ready: an A/B job starts both runs warm
SPARE_IDLE_SECONDS = 600.0  # spares unused this long are let go: each holds an interpreter with torch imported


@dataclass
class Job:
    """One visitor's request: one run, or two (A and B) trained one after the other on the same seed."""

    session: str
    configs: List[RunConfig]
    updates: "queue.Queue[Tuple[str, int, object]]" = field(default_factory=queue.Queue)
    stop: threading.Event = field(default_factory=threading.Event)
    seen: float = field(default_factory=time.monotonic)
    reports: List[Dict[str, object]] = field(default_factory=list)  # per run: its latest event of each kind

    def __post_init__(self) -> None:
        self.reports = [{} for _ in self.configs]  # filled by the runner as events come: Stop's answer reads them

    def abandoned(self, limit: float) -> bool:
        return time.monotonic() - self.seen > limit


class PlaygroundRunner:
    """A line of jobs served one at a time by a background thread."""

    def __init__(self, threads: int = 1, max_waiting: int = MAX_WAITING, abandoned_seconds: float = ABANDONED_SECONDS,
                 process: Callable[..., TrainingProcess] = TrainingProcess, spares: int = SPARES) -> None:
        self.threads, self.max_waiting, self.abandoned_seconds = threads, max_waiting, abandoned_seconds
        self.spares = spares
        self._process = process
        self._spares: List[TrainingProcess] = []  # started, waiting for a run
        self._used = time.monotonic()
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
            self._ensure_thread()
            self._lock.notify_all()
        return job

    def _ensure_thread(self) -> None:
        """Start the runner's thread if it is not running (with the lock held)."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._serve, name="playground-runner", daemon=True)
            self._thread.start()

    def position(self, job: Job) -> int:
        """0: training; n > 0: n jobs ahead of it; -1: no longer in line."""
        with self._lock:
            return self._line.index(job) if job in self._line else -1

    def stop(self, session: str) -> Optional[Job]:
        """Stop this session's job (a waiting one leaves the line); the job, or None if there was none."""
        with self._lock:
            jobs = [job for job in self._line if job.session == session]
            for job in jobs:
                job.stop.set()
                if self._line.index(job) > 0:
                    self._line.remove(job)
                    job.updates.put(("end", -1, None))
            return jobs[0] if jobs else None

    def warm(self) -> int:
        """Start spare processes up to ``spares`` (they import torch in the background); returns how many wait."""
        with self._lock:
            self._used = time.monotonic()
            self._spares = [p for p in self._spares if p.alive]
            missing = self.spares - len(self._spares)
        fresh = [self._process(threads=self.threads) for _ in range(max(0, missing))]
        with self._lock:
            self._spares.extend(fresh)
            self._ensure_thread()  # it lets idle spares go
            return len(self._spares)

    def spare_count(self) -> Tuple[int, int]:
        """(spares waiting, of which ready)."""
        with self._lock:
            alive = [p for p in self._spares if p.alive]
            return len(alive), sum(p.ready for p in alive)

    def close_spares(self) -> None:
        """Let every spare go (the server is shutting down, or nobody used the playground for a while)."""
        with self._lock:
            spares, self._spares = self._spares, []
        for spare in spares:
            spare.close()

    def _take(self) -> TrainingProcess:
        """A spare (a ready one first), else a cold process."""
        with self._lock:
            self._used = time.monotonic()
            alive = sorted((p for p in self._spares if p.alive), key=lambda p: not p.ready)
            if alive:
                self._spares = alive[1:]
                return alive[0]
        return self._process(threads=self.threads)

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
                if self._spares and time.monotonic() - self._used > SPARE_IDLE_SECONDS:
                    threading.Thread(target=self.close_spares, daemon=True).start()
                self._lock.wait(timeout=60)

    def _serve(self) -> None:
        while True:
            job = self._next()
            processes: List[TrainingProcess] = []
            try:
                processes = [self._take() for _ in job.configs]
                ready = self._wait_ready(job, processes)
                for index, (config, process) in enumerate(zip(job.configs, processes)):
                    gone = not ready or job.stop.is_set() or job.abandoned(self.abandoned_seconds)
                    if gone or not self._train(job, index, config, process):
                        break
            except Exception as exc:  # noqa: BLE001 - reported to the visitor; the runner goes on
                logger.exception("playground run failed")
                job.updates.put(("error", -1, f"{type(exc).__name__}: {exc}"))
            finally:
                for process in processes:
                    process.close()  # those a stopped job never used, and a failed one's
                job.updates.put(("end", -1, None))
                with self._lock:
                    if job in self._line:
                        self._line.remove(job)
                    self._lock.notify_all()
                self.warm()  # the next visitor starts warm

    def _wait_ready(self, job: Job, processes: List[TrainingProcess]) -> bool:
        """Wait until every process of the job, and every spare, has imported torch (none then competes with a
        run's budget); False if the visitor stopped or left meanwhile."""
        deadline = time.monotonic() + STARTUP_SECONDS
        while not all(p.ready for p in processes) or not all(p.ready for p in self._spares if p.alive):
            if job.stop.is_set() or job.abandoned(self.abandoned_seconds):
                return False
            if time.monotonic() > deadline or not all(p.alive for p in processes):
                raise RuntimeError("a training process did not start")
            time.sleep(0.1)
        return True

    def _train(self, job: Job, index: int, config: RunConfig, process: TrainingProcess) -> bool:
        """Train one run of ``job`` in ``process``, forwarding its events; False if the job should not go on."""
        process.start(config)
        stopped_at: Optional[float] = None
        try:
            while process.finished is None:
                try:
                    event = process.poll(0.25)
                except RuntimeError as exc:
                    job.updates.put(("error", index, str(exc)))
                    return False
                if event is not None:
                    job.reports[index][event.kind] = event
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
