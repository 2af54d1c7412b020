"""What a REST request sends, read as LibreTranslate reads it, and every way it can be wrong as a 4xx.

The query string, overridden by a JSON or form body (urlencoded or multipart).  The body must arrive within
a deadline (a client trickling bytes is answered 408, never waited on) and within a size (413, refused from
its ``Content-Length`` or as soon as a streamed body passes it, never read whole); JSON nested too deeply and
text that is not Unicode (lone surrogates, which ``\\ud800`` escapes produce) are 400s.  Answers are encoded so
that no value, however odd, can make the encoding itself fail.
"""
from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable, Dict, Optional, Sequence
from urllib.parse import parse_qsl

import anyio
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from transformer_hub.hub import ModelLoadError
from transformer_hub.text.models import QUALITIES

from ..hosting.limits import RequestError
from ..hosting.logs import hide_paths
from ..serving.batching import Cancelled, QueueFull
from ..serving.languages import AUTO, LANGUAGES

logger = logging.getLogger(__name__)
DISCONNECT_POLL = 0.25  # seconds between looks at whether a request's client is still there


class RestError(Exception):
    """An answer other than 200: its HTTP status and LibreTranslate's ``{"error": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class SafeJSONResponse(JSONResponse):
    """JSON whose strings may hold lone surrogates: they go out as ``\\udXXX`` escapes instead of failing."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode(
            "utf-8", "backslashreplace")


def error_response(status: int, message: str, headers: Dict[str, str] = None) -> JSONResponse:
    """The one shape of an error answer: LibreTranslate's ``{"error": message}`` (the server's folders left out)."""
    return SafeJSONResponse({"error": hide_paths(message)}, status_code=status, headers=headers)


def refusal(exc: Exception, doing: str, path: str) -> RestError:
    """The answer to ``exc``, raised while the route ``path`` was to ``doing`` ("translate text"): the caller's
    mistakes (the Space's ``RequestError``, the library's ``ValueError``) 400, a full queue 429, work stopped because
    the client left 499, a model that cannot be loaded 503, anything else a fault of the server: 500, logged with its
    traceback."""
    if isinstance(exc, RestError):
        return exc
    if isinstance(exc, QueueFull):
        return RestError(429, f"Slowdown: {exc}; retry in a moment")
    if isinstance(exc, Cancelled):  # nobody reads it: the client has gone (nginx's "client closed request")
        return RestError(499, f"Cannot {doing}: {exc}")
    if isinstance(exc, ModelLoadError):
        logger.warning("REST %s: a model could not be loaded: %s", path, exc)
        return RestError(503, f"Cannot {doing}: the model could not be loaded: {exc}")
    if isinstance(exc, RequestError):
        return RestError(400, f"Invalid request: {exc.message}")
    if isinstance(exc, ValueError):  # the library's checks of this input (a document it cannot read ...)
        return RestError(400, f"Invalid request: {exc}")
    logger.error("REST %s failed", path, exc_info=exc)
    return RestError(500, f"Cannot {doing}: {type(exc).__name__}: {exc}")


def required(params: Dict[str, Any], name: str, text: bool = False) -> Any:
    """Parameter ``name``, or 400 when it is missing or empty (with ``text``: or not a text)."""
    value = params.get(name)
    if value is None or value == "" or value == [] or (text and not isinstance(value, str)):
        raise RestError(400, f"Invalid request: missing {name} parameter")
    return value


def read_language(value: Any, auto: bool = False) -> str:
    """A language the Space offers (or, with ``auto``, "auto": detect it), else LibreTranslate's 400."""
    if not isinstance(value, str) or (value not in LANGUAGES and not (auto and value == AUTO)):
        raise RestError(400, f"{value} is not supported")
    return value


def read_api_key(params: Dict[str, Any]) -> Optional[str]:
    """The ``api_key`` parameter (None when not given), 400 when it is not a text."""
    key = params.get("api_key")
    if key is not None and not isinstance(key, str):
        raise RestError(400, "Invalid request: api_key must be a text")
    return key


async def read_params(request: Request, max_bytes: int, timeout: float) -> Dict[str, Any]:
    """The request's parameters (query string, then the body read within ``timeout`` s and ``max_bytes``)."""
    params: Dict[str, Any] = dict(request.query_params)
    if request.method == "POST":
        body = await read_body(request, max_bytes, timeout)
        if body:
            params.update(await _parse(request, body))
    check_text(params)
    return params


async def read_body(request: Request, max_bytes: int, timeout: float) -> bytes:
    """The request's body, refused (408) unless it arrives within ``timeout`` s, (413) when over ``max_bytes``."""
    try:
        with anyio.fail_after(timeout):
            return await _body(request, max_bytes)
    except TimeoutError:
        raise RestError(408, f"The request body did not arrive within {timeout:g} seconds.") from None
    except ClientDisconnect:  # nobody is left to read the answer; the log gets one line
        raise RestError(400, "The client disconnected before its request body arrived.") from None


DRAIN_BYTES = 16 << 20  # a refused body up to this size is read (and dropped) so its client gets the 413
DRAIN_SECONDS = 5.0


async def _body(request: Request, max_bytes: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > max_bytes):
        await _drain(request, int(declared) if declared.isdigit() else DRAIN_BYTES + 1)
        raise RestError(413, f"Request body too large: {declared} bytes, the limit is {max_bytes}.")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            await _drain(request, len(body))
            raise RestError(413, f"Request body too large: over {max_bytes} bytes.")
    return bytes(body)


async def _drain(request: Request, size: int) -> None:
    """Read and drop the rest of a refused body of ``size`` bytes (up to ``DRAIN_BYTES``, ``DRAIN_SECONDS``): a
    client still sending when the server answers and closes gets a connection reset, never the 413."""
    if size > DRAIN_BYTES:
        return
    seen = 0
    with anyio.move_on_after(DRAIN_SECONDS):  # straight from ASGI: the request's stream may be half read
        while seen <= DRAIN_BYTES:
            message = await request.receive()
            if message.get("type") != "http.request":
                return
            seen += len(message.get("body", b""))
            if not message.get("more_body", False):
                return


async def _parse(request: Request, body: bytes) -> Dict[str, Any]:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    try:
        if kind == "application/json":
            data = json.loads(body)
            if not isinstance(data, dict):
                raise RestError(400, "Invalid JSON format")
            return data
        if kind == "multipart/form-data":
            request._body = body  # starlette parses the form from the body already read
            form = await request.form()
            return {k: v for k, v in form.items() if isinstance(v, str)}
        return dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))  # urlencoded
    except RecursionError:
        raise RestError(400, "Invalid JSON format: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, json.JSONDecodeError):
            raise RestError(400, "Invalid JSON format") from exc
        raise RestError(400, f"Invalid request body: {exc}") from exc


def check_text(params: Dict[str, Any]) -> None:
    """400 for a parameter (or an item of a list) holding a lone surrogate: it is not text."""
    for name, value in params.items():
        items = value if isinstance(value, list) else [value]
        for index, item in enumerate(items):
            if isinstance(item, str) and not _encodable(item):
                where = f"{name}[{index}]" if isinstance(value, list) else str(name)
                raise RestError(400, f"Invalid request: {_printable(where)} is not valid Unicode text "
                                     "(it holds a lone surrogate)")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _printable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def read_domain(params: Dict[str, Any], known: Sequence[str]) -> str:
    """Our ``domain`` extension: "auto" (the default: each text's domain told from its words) or one of the
    ``known`` domains of the models (a model trained with domain tags reads its text with that tag)."""
    value = params.get("domain")
    if value in (None, "", AUTO):
        return AUTO
    if not isinstance(value, str) or value not in known:
        choices = ", ".join([AUTO, *known]) if known else "auto (these models were trained without domains)"
        raise RestError(400, f"Invalid request: domain must be {choices}, got {_printable(str(value))[:40]!r}")
    return value


def read_quality(params: Dict[str, Any], html: bool = False) -> str:
    """Our ``quality`` extension: "fast" (the default: beam search) or "best" (reranked, space/serving/quality.py)."""
    value = params.get("quality")
    if value in (None, ""):
        return "fast"
    if not isinstance(value, str) or value not in QUALITIES:
        raise RestError(400, f"Invalid request: quality must be {' or '.join(QUALITIES)}, got {_printable(str(value))[:40]!r}")
    if value == "best" and html:
        raise RestError(400, "Invalid request: quality best is supported with format=text only")
    return value


async def watch_disconnect(request: Request, left: threading.Event) -> None:
    """Set ``left`` once the client has gone (its body is read by then: what comes next is a disconnect)."""
    while not await request.is_disconnected():
        await anyio.sleep(DISCONNECT_POLL)
    left.set()


async def run_watched(request: Request, work: Callable[[Callable[[], bool]], Any],
                      limiter: Optional[anyio.CapacityLimiter] = None) -> Any:
    """``work(cancelled)`` in a worker thread of ``limiter``, ``cancelled()`` true once the client has gone, so the
    work stops at its next look (a document's worker killed, no next part of its sentences decoded)."""
    left, failed, done = threading.Event(), None, None
    async with anyio.create_task_group() as group:
        group.start_soon(watch_disconnect, request, left)
        try:
            done = await anyio.to_thread.run_sync(lambda: work(left.is_set), limiter=limiter)
        except Exception as exc:  # noqa: BLE001 - raised below, outside the group (not as a group)
            failed = exc
        finally:
            group.cancel_scope.cancel()
    if failed is not None:
        raise failed
    return done
