"""Stopping on SIGINT/SIGTERM: the first signal lets the current update finish and a checkpoint be saved; a
second one stops at once."""
from __future__ import annotations

import signal

from tqdm.auto import tqdm


class StopSignal:
    """Whether a stop was asked for (``requested``), set by the handlers ``install()`` puts in place."""

    def __init__(self) -> None:
        self.requested = False

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        tqdm.write(f"signal {signum}: saving a checkpoint after this update, then stopping")

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                signal.signal(sig, self._handle)
            except ValueError:  # not in the main thread (e.g. under a test runner thread)
                pass
