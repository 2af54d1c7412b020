"""Who has left: the page's visitors whose tab closed, and the "client left" test the work of a request reads.

REST routes hand their work a ``cancelled()`` that watches the HTTP connection (``space/rest/input.py``). A page
event has no connection to watch: Gradio runs it in a thread after its queue call has answered. What tells that
the visitor has gone is their session's heartbeat stream closing, which runs the page's ``unload`` events; the
page marks the session ``left`` there, and every model-running event runs with ``CLIENT_LEFT`` set to a test of
its own session, which ``SpaceModels`` and the document path read when no ``cancelled`` is given: the decoder then
decodes no next part of a departed visitor's sentences and a document's worker is stopped.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from contextvars import ContextVar
from typing import Callable, Optional

# the running request's "has its client left?": None where nobody watches (a test, a script, the MCP tools)
CLIENT_LEFT: ContextVar[Optional[Callable[[], bool]]] = ContextVar("client_left", default=None)


class Departures:
    """Sessions that have left, remembered ``keep_seconds`` (longer than any request runs) and at most ``most``
    of them (the oldest forgotten first), so the set never grows with the visitors."""

    def __init__(self, keep_seconds: float = 3600.0, most: int = 100_000) -> None:
        self.keep_seconds, self.most = keep_seconds, most
        self._left: "OrderedDict[str, float]" = OrderedDict()
        self._lock = threading.Lock()

    def leave(self, session: Optional[str]) -> None:
        """``session`` has gone (its page closed)."""
        if not session:
            return
        now = time.monotonic()
        with self._lock:
            self._left[session] = now
            self._left.move_to_end(session)
            while self._left and (len(self._left) > self.most or
                                  now - next(iter(self._left.values())) > self.keep_seconds):
                self._left.popitem(last=False)

    def gone(self, session: Optional[str]) -> bool:
        with self._lock:
            return bool(session) and session in self._left

    def watcher(self, session: Optional[str]) -> Optional[Callable[[], bool]]:
        """The ``cancelled()`` of a request of ``session``: true once the session has left (None: no session)."""
        return (lambda: self.gone(session)) if session else None


DEPARTED = Departures()  # one server process, one set of visitors: the page's sessions are random and unique


def client_left(cancelled: Optional[Callable[[], bool]]) -> Optional[Callable[[], bool]]:
    """``cancelled`` if given, else the running request's (``CLIENT_LEFT``)."""
    return cancelled if cancelled is not None else CLIENT_LEFT.get()
