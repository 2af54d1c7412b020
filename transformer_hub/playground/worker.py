"""A playground run in its own process: it never holds the caller's GIL or takes its threads.

``TrainingProcess(config)`` spawns a fresh interpreter that sets one torch thread (``threads``) and runs
``trainer.train``; the caller reads the events with ``poll`` (returns None while nothing came, so a
server can check for a departed visitor in between) or ``events``.  ``TrainingProcess()`` without a config
is a spare: it imports torch and the library and trains two throwaway steps (a cold start's seconds) and waits; ``start(config)``
later gives it its run, which then begins at once (``ready`` says whether the imports are done).  ``stop()`` asks the run to end at
the next step (it still reports its final evaluation); ``close()`` ends the process whatever it is
doing.  A run that outlives its budget by ``grace_seconds`` is killed.  After ``done``, ``model`` is
the trained ``Transformer``, rebuilt here from the weights the process sent back (plain arrays; nothing
is unpickled from outside this machine).
"""
from __future__ import annotations

import multiprocessing as mp
import queue
import time
from typing import Any, Dict, Iterator, Optional

from .run import RunConfig
from .trainer import Event

STARTUP_SECONDS = 60.0  # a spawned interpreter imports torch and the library before the budget's clock starts
WARM_UP = RunConfig(task="copy", max_steps=2, batch_size=8, held_out=8, min_len=3, max_len=4, budget_seconds=30)


def _child(configs: Any, events: Any, stop: Any, ready: Any, threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    from .trainer import train

    # a throwaway run of two steps: torch's first forward, backward, Adam step and greedy decoding cost seconds of
    # one-time set-up in a fresh interpreter, paid here rather than by the visitor's run (which seeds its own RNG)
    for _ in train(WARM_UP):
        pass
    ready.set()
    config = configs.get()  # a spare waits here until it is given a run (None: it is let go)
    if config is None:
        return
    try:
        for event in train(RunConfig.from_dict(config), should_stop=stop.is_set):
            model = getattr(event, "model", None)
            if model is not None:
                del event.model
            events.put(("event", event))
            if model is not None:
                events.put(("model", {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}))
    except Exception as exc:  # noqa: BLE001 - reported to the parent as one line, not a traceback
        events.put(("error", f"{type(exc).__name__}: {exc}"))


class TrainingProcess:
    """One run of ``config`` in a spawned process with ``threads`` torch threads (no config: a spare, see above)."""

    def __init__(self, config: Optional[RunConfig] = None, threads: int = 1, grace_seconds: float = 15.0) -> None:
        context = mp.get_context("spawn")
        self.config: Optional[RunConfig] = None
        self.model = None  # the trained Transformer once the run is done
        self.finished: Optional[Event] = None
        self.grace_seconds = grace_seconds
        self._events, self._configs = context.Queue(), context.Queue()
        self._stop, self._ready = context.Event(), context.Event()
        self._deadline = float("inf")
        self._process = context.Process(target=_child, args=(self._configs, self._events, self._stop, self._ready,
                                                             threads), daemon=True, name="playground-training")
        self._process.start()
        if config is not None:
            self.start(config)

    @property
    def ready(self) -> bool:
        """True once the process has imported torch and the library: a run given now starts at once."""
        return self._ready.is_set()

    def start(self, config: RunConfig) -> None:
        """Give this process its run (once); it begins as soon as the process is ready."""
        if self.config is not None:
            raise RuntimeError("this training process has its run already")
        self.config = config
        startup = 0.0 if self.ready else STARTUP_SECONDS
        self._deadline = time.monotonic() + startup + config.budget_seconds + self.grace_seconds
        self._configs.put(config.to_dict())

    def poll(self, timeout: float = 0.25) -> Optional[Event]:
        """The next event, or None if none came within ``timeout`` seconds; raises ``RuntimeError`` on failure."""
        if self.finished is not None:
            return None
        if self.config is None:
            raise RuntimeError("this training process has no run yet: call start(config) first")
        try:
            kind, payload = self._events.get(timeout=timeout)
        except queue.Empty:
            if time.monotonic() > self._deadline:
                self.close()
                raise RuntimeError("the training run overran its time budget and was ended")
            if not self._process.is_alive() and self._events.empty():
                raise RuntimeError(f"the training process ended unexpectedly (exit code {self._process.exitcode})")
            return None
        if kind == "error":
            self.close()
            raise RuntimeError(f"the training run failed: {payload}")
        if kind == "model":
            self.model = _rebuild(self.config, payload)
            return self.poll(timeout)  # the done event came just before
        if payload.kind == "done":
            self.finished = payload
            self.model = _rebuild(self.config, self._events.get(timeout=30)[1])
        return payload

    def events(self) -> Iterator[Event]:
        """Every event until ``done`` (inclusive)."""
        while self.finished is None:
            event = self.poll()
            if event is not None:
                yield event
        self.close()

    def stop(self) -> None:
        """Ask the run to stop after the current step; its ``done`` event says ``stopped``."""
        self._stop.set()

    @property
    def alive(self) -> bool:
        return self._process.is_alive()

    def close(self) -> None:
        """End the process now (after a short chance to finish on its own; a spare is let go)."""
        self._stop.set()
        if self.config is None:
            self._configs.put(None)
        self._process.join(timeout=2)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(timeout=2)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        for channel in (self._events, self._configs):
            channel.close()
            channel.cancel_join_thread()  # a process that is gone reads nothing more


def _rebuild(config: RunConfig, weights: Dict[str, Any]):
    import torch

    from .parts import build_model

    model = build_model(config.model_config(), config.positions, config.causal_mask, config.residual)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
    return model.eval()
