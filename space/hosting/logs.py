"""The server's log, as a public server needs it: one line per visitor's mistake or disconnect, a traceback
only for a fault of the server, and a rate limit so that a flood of requests cannot fill the disk.

Gradio prints a traceback for every event that fails, the visitor's mistakes included (a file input that was
never uploaded, too few arguments), and sends ``str(error)``, which for the latter lists its components with
their memory addresses; ``install_gradio_errors`` routes both through here (one line each, the message cut to
its first line).  uvicorn logs a client that went away mid-request as "Exception in ASGI application" with a
traceback; ``OneLineDisconnects`` makes it one line.
"""
from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, Tuple

import gradio.queueing
import gradio.utils
from gradio.exceptions import Error as AppError
from gradio.exceptions import InvalidPathError
from starlette.requests import ClientDisconnect

logger = logging.getLogger("space.server")
DISCONNECTS = (ClientDisconnect, ConnectionError)
_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")  # what a terminal or a log reader takes as a line break


class OneLineFormatter(logging.Formatter):
    """Each record's message on its line: a line break a visitor put in a field (``source="en\\n..."``) comes
    out escaped, so no request can forge a log line; a traceback (a fault of the server) keeps its lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = _CONTROL.sub(lambda m: ascii(m.group())[1:-1], record.message)
        return super().formatMessage(record)


class RateLimit(logging.Filter):
    """At most ``burst`` records per logger and level each ``window`` seconds; the next one let through after
    a drop says how many were dropped."""

    def __init__(self, burst: int = 20, window: float = 10.0) -> None:
        super().__init__()
        self.burst, self.window = burst, window
        self._counts: Dict[Tuple[str, int], list] = {}  # key -> [window start, passed, dropped]
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        with self._lock:
            state = self._counts.setdefault((record.name, record.levelno), [now, 0, 0])
            if now - state[0] >= self.window:
                state[0], state[1] = now, 0
            if state[1] >= self.burst:
                state[2] += 1
                return False
            state[1] += 1
            dropped, state[2] = state[2], 0
        if dropped:
            record.msg = f"({dropped} similar lines dropped) {record.msg}"
        return True


class OneLineDisconnects(logging.Filter):
    """uvicorn's traceback for a client that disconnected mid-request, as one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, DISCONNECTS):
            record.msg, record.args = f"client disconnected mid-request ({type(error).__name__})", ()
            record.exc_info, record.levelno, record.levelname = None, logging.INFO, "INFO"
        return True


def is_visitors_mistake(error: BaseException) -> bool:
    """A refusal of what a visitor sent (not a fault of the server): Gradio's and our messages, a path that
    was not uploaded, or inputs Gradio's own reading refused (its validation, a file input without a path, a
    URL its download refuses)."""
    if isinstance(error, (AppError, InvalidPathError, *DISCONNECTS)):
        return True
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return isinstance(error, (ValueError, TypeError)) and bool(frames) and (
        frames[-1] == "validate_inputs" or "preprocess_data" in frames)


def _server_folders() -> list:
    folders = {os.getcwd(), str(Path(__file__).resolve().parents[2]), sys.prefix, sys.base_prefix,
               tempfile.gettempdir(), os.path.expanduser("~")}
    return sorted((f.rstrip(os.sep) + os.sep for f in folders if len(f) > 1), key=len, reverse=True)


def hide_paths(message: str) -> str:
    """``message`` without the server's own folders (its checkout, Python's, the temporary folder, the home):
    a visitor's ``x.docx`` that Gradio made ``/srv/app/x.docx`` is named ``x.docx`` again."""
    for folder in _server_folders():
        message = message.replace(folder, "")
    return message


class _Traceback:
    """Stands in for the ``traceback`` module inside ``gradio.queueing``: its ``print_exc`` logs instead."""

    def __getattr__(self, name: str):
        import traceback

        return getattr(traceback, name)

    @staticmethod
    def print_exc(*args, **kwargs) -> None:
        error = sys.exc_info()[1]
        if error is not None and is_visitors_mistake(error):
            logger.info("event refused: %s", first_line(error))
        else:
            logger.error("event failed", exc_info=True)


def first_line(error: BaseException) -> str:
    text = error.message if isinstance(error, AppError) else str(error)
    return (str(text).strip().splitlines() or [type(error).__name__])[0]


def _error_payload(error, show_error):
    """Gradio's error payload, a message other than our own cut to its first line (no component reprs), the
    server's folders left out."""
    content = gradio.utils.error_payload(error, show_error)
    if error is not None and not isinstance(error, AppError) and isinstance(content.get("error"), str):
        content["error"] = first_line(error)
    if isinstance(content.get("error"), str):
        content["error"] = hide_paths(content["error"])
    return content


def install() -> None:
    """Route Gradio's event failures through ``logger``, trim the messages it sends, and make uvicorn's
    disconnect tracebacks one line (idempotent)."""
    gradio.queueing.traceback = _Traceback()
    gradio.queueing.error_payload = _error_payload
    uvicorn_log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, OneLineDisconnects) for f in uvicorn_log.filters):
        uvicorn_log.addFilter(OneLineDisconnects())


def configure(level: int = logging.INFO) -> None:
    """One rate-limited stderr handler for the server's loggers (ours, the library's and uvicorn's); call it
    after uvicorn has set up its own logging, which it replaces for uvicorn's loggers."""
    handler = logging.StreamHandler()
    handler.setFormatter(OneLineFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RateLimit())
    for name, named_level in (("space", level), ("transformer_hub", level), ("uvicorn", logging.WARNING),
                              ("uvicorn.error", logging.WARNING)):
        named = logging.getLogger(name)
        for old in named.handlers[:]:
            named.removeHandler(old)
        named.addHandler(handler)
        named.setLevel(named_level)
        named.propagate = False
