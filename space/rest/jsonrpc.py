"""The MCP server's JSON-RPC bodies read before it sees them: within the REST routes' size and deadline, JSON
at most ``MAX_DEPTH`` deep, ids a string, an integer of at most 64 bits or null; anything else a one-line 4xx.

    app.add_middleware(JsonRpcGuard, max_bytes=settings.max_body_bytes, timeout=settings.body_timeout)

The MCP server (Gradio's, at ``/gradio_api/mcp/``) parses a body with ``json.loads`` and answers what it cannot
parse with a 500 and a 16-line traceback in the log: a body nested 100,000 deep (``RecursionError``), an id of
5,000 digits (past Python's limit on converting digits to an integer). Here such a body is a 400 in JSON-RPC's
error shape and one line in the log; a body that passes goes on to the MCP server unchanged.
"""
from __future__ import annotations

import json
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .input import RestError, read_body

logger = logging.getLogger(__name__)
MCP_PREFIX = "/gradio_api/mcp"
MAX_DEPTH = 32          # JSON-RPC messages of MCP's tools nest a handful of levels
MAX_ID = 1 << 63        # ids are counters: a 64-bit integer is plenty
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def check_message(body: bytes) -> None:
    """``RestError`` (400) unless ``body`` is JSON within ``MAX_DEPTH`` whose messages' ids are sound."""
    try:
        message = json.loads(body)
    except RecursionError:
        raise RestError(400, "Parse error: the JSON is nested too deeply") from None
    except ValueError as exc:  # bad JSON, or a number past Python's limit on digits
        raise RestError(400, f"Parse error: {str(exc).split(';')[0]}") from None
    _check_depth(message)
    for item in message if isinstance(message, list) else [message]:
        identifier = item.get("id") if isinstance(item, dict) else None
        if isinstance(identifier, bool) or not (identifier is None or isinstance(identifier, str)
                                                or (isinstance(identifier, int) and abs(identifier) < MAX_ID)):
            raise RestError(400, "Invalid Request: an id must be a string, an integer of at most 64 bits or null")


def _check_depth(value: Any) -> None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise RestError(400, f"Invalid Request: the JSON is nested more than {MAX_DEPTH} deep")
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


class JsonRpcGuard:
    """An ASGI middleware: each POST under ``MCP_PREFIX`` read (``max_bytes``, ``timeout`` s) and checked by
    ``check_message`` first; refused as a one-line 4xx, else handed on with its body."""

    def __init__(self, app: ASGIApp, max_bytes: int, timeout: float, prefix: str = MCP_PREFIX) -> None:
        self.app, self.max_bytes, self.timeout, self.prefix = app, max_bytes, timeout, prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or not scope.get("path", "").startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        try:
            body = await read_body(Request(scope, receive), self.max_bytes, self.timeout)
            check_message(body)
        except RestError as exc:
            logger.info("MCP %s: %d %s", scope.get("path"), exc.status, exc.message)
            code = PARSE_ERROR if exc.message.startswith("Parse error") else INVALID_REQUEST
            answer = JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": exc.message}},
                                  status_code=exc.status)
            await answer(scope, receive, send)
            return
        handed = False

        async def replay() -> Message:
            nonlocal handed
            if handed:
                return await receive()  # after the body: a disconnect, when it comes
            handed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)
