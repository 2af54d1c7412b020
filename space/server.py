"""One server for the page and the programs: the Gradio Blocks mounted on a FastAPI app with the REST routes.

    app = build_app(build_demo())           # POST /translate, POST /detect, GET /languages, and the page at /
    serve(app)                              # uvicorn on GRADIO_SERVER_NAME:GRADIO_SERVER_PORT (127.0.0.1:7860)

The REST routes come before the mounted page, so they answer first; they share the demo's ``SpaceContext``.
CORS is LibreTranslate's on the REST routes (``Access-Control-Allow-Origin: *``: they carry no credentials);
``SPACE_CORS_ORIGINS`` narrows it to the origins it names (empty: no CORS headers).  The page keeps Gradio's
own rules.  uvicorn bounds the connections: ``SPACE_MAX_CONNECTIONS`` at once (more get 503) and
``SPACE_KEEP_ALIVE`` seconds for an idle kept-alive one.  ``X-Forwarded-For`` is believed only from the proxies
``SPACE_FORWARDED_ALLOW_IPS`` names (uvicorn's ``forwarded_allow_ips``; unset: from none, so no client, local or
not, can choose the address its rate limit counts). A request's headers have a deadline, one address a share of
the connections, an upload's body a deadline (space/hosting/connections.py). A REST path asked with a method it does not take, or
``/download_file`` without a name, is answered in the routes' ``{"error": ...}`` shape, not the page's.
"""
from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from typing import Any, Callable, Dict, Optional, Sequence

import gradio as gr
from transformer_hub import __version__
from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import HTMLResponse, JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from .hosting import logs
from .hosting.access import Access
from .hosting.connections import UploadDeadline, guarded_protocol
from .page.demo import QUEUE_MAX_SIZE, launch_options
from .rest import api_docs
from .rest.input import error_response
from .rest.jsonrpc import JsonRpcGuard
from .rest.libre import LibreAPI
from .rest.libre_schema import OPERATIONS as LIBRE_OPERATIONS
from .rest.routes import PATHS, RestAPI, RestSettings, env_number
from .rest.schema import OPERATIONS
from .serving.context import SpaceContext

# the LibreTranslate paths that get CORS headers (a download's path ends with its name)
REST_PATHS = (*PATHS, "/frontend/settings", "/translate_file", "/suggest", "/health", "/spec", "/download_file/")
UPLOAD_PATHS = ("/gradio_api/upload",)  # Gradio's upload route
MOUNT_OPTIONS = ("css", "theme", "show_error", "footer_links", "head")  # the launch options mount_gradio_app takes too


class RestCORS:
    """CORS headers (and preflight answers) for the REST paths only; every other path passes through untouched."""

    def __init__(self, app: ASGIApp, origins: Sequence[str], paths: Sequence[str] = PATHS) -> None:
        self.app, self.paths = app, tuple(paths)
        self.cors = CORSMiddleware(app, allow_origins=list(origins), allow_methods=["GET", "POST"],
                                   allow_headers=["Content-Type", "Authorization"], max_age=600)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path in self.paths or path.startswith("/download_file/")):
            await self.cors(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def rest_app(ctx: SpaceContext, settings: Optional[RestSettings] = None) -> FastAPI:
    """A FastAPI app serving LibreTranslate's routes (and /spec, /docs) over ``ctx``: what ``build_app`` mounts
    the page on, and what each Ray Serve replica serves alone (space/scale.py)."""
    settings = settings or RestSettings.from_env(queue=QUEUE_MAX_SIZE)
    app = FastAPI(title="LibreTranslate-compatible translation API", version=__version__, docs_url=None,
                  redoc_url=None, openapi_url="/openapi.json")  # the REST routes' description (space/rest/schema.py)
    access = Access()
    rest = RestAPI(ctx, settings, access)
    libre = LibreAPI(ctx, access, settings.body_timeout, max_body_bytes=settings.max_body_bytes)
    operations = {**OPERATIONS, **LIBRE_OPERATIONS}
    for path, endpoint in {**rest.endpoints(), **libre.endpoints()}.items():
        app.add_api_route(path, endpoint, **operations[path])
    _wrong_methods(app, operations)
    app.add_api_route("/spec", lambda: JSONResponse(app.openapi()), methods=["GET"], include_in_schema=False)
    app.add_api_route("/docs", lambda: HTMLResponse(api_docs.render(app.openapi())), methods=["GET"],
                      include_in_schema=False)
    if settings.cors_origins:
        app.add_middleware(RestCORS, origins=settings.cors_origins, paths=REST_PATHS)
    app.state.rest, app.state.libre = rest, libre  # for tests and benchmarks
    libre.folder.start_sweeping()
    return app


def build_app(demo: gr.Blocks, settings: Optional[RestSettings] = None) -> FastAPI:
    """A FastAPI app serving LibreTranslate's routes over ``demo.space_context`` and the page at ``/``."""
    app = rest_app(demo.space_context, settings)
    options = {k: v for k, v in launch_options().items() if k in MOUNT_OPTIONS}
    app = gr.mount_gradio_app(app, demo, path="", max_file_size=demo.space_context.limits.max_file_bytes,
                              allowed_paths=[], **options)
    # Gradio checks that a file input was uploaded (processing_utils._check_allowed) only once the Blocks are
    # marked launched, which launch() does and mount_gradio_app does not: without this, an API call naming any
    # path on the server has that file copied into the cache and handed to the event.
    demo.has_launched = True
    app.add_middleware(UploadDeadline, paths=UPLOAD_PATHS)  # Gradio's upload reads its body without a deadline
    rest = app.state.rest.settings  # the MCP server's bodies: the REST routes' size and deadline, checked first
    app.add_middleware(JsonRpcGuard, max_bytes=rest.max_body_bytes, timeout=rest.body_timeout)
    logs.install()
    return app


HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def _wrong_methods(app: FastAPI, operations: Dict[str, Dict[str, Any]]) -> None:
    """A REST path's other methods, and ``/download_file`` without a name, answered as the routes answer (405,
    404 with ``{"error": ...}``) before the mounted page's catch-all can answer ``{"detail": "Not Found"}``."""
    for path, operation in operations.items():
        allowed = tuple(operation.get("methods", ()))
        others = [m for m in HTTP_METHODS if m not in allowed]
        if others:
            app.add_api_route(path, _not_allowed(path, allowed), methods=others, include_in_schema=False)

    async def no_name() -> JSONResponse:
        return error_response(404, "No file named: ask for /download_file/NAME, the URL /translate_file answered")

    app.add_api_route("/download_file", no_name, methods=list(HTTP_METHODS), include_in_schema=False)


def _not_allowed(path: str, allowed: Sequence[str]):
    async def answer() -> JSONResponse:
        return error_response(405, f"Method not allowed: {path} takes {' or '.join(allowed)}",
                              headers={"Allow": ", ".join(allowed)})
    return answer


def forwarding_options() -> Dict[str, Any]:
    """uvicorn's proxy settings: ``X-Forwarded-For`` believed only from ``SPACE_FORWARDED_ALLOW_IPS`` (a comma-
    separated list of addresses, or ``*``); unset or empty, from nobody (uvicorn's own default trusts loopback,
    so a local proxy's clients could pick their address)."""
    trusted = os.environ.get("SPACE_FORWARDED_ALLOW_IPS", "").strip()
    if not trusted:
        return {"proxy_headers": False, "forwarded_allow_ips": ""}
    return {"proxy_headers": True, "forwarded_allow_ips": trusted}


def host_and_port() -> tuple:
    """Where to listen: Gradio's own GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (default 127.0.0.1:7860)."""
    return os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"), int(os.environ.get("GRADIO_SERVER_PORT", "7860"))


def connection_limits() -> Dict[str, int]:
    """uvicorn's connection limits: ``SPACE_MAX_CONNECTIONS`` (default 512) connections and tasks at once,
    ``SPACE_KEEP_ALIVE`` (default 5) seconds before an idle kept-alive connection is closed."""
    return {"limit_concurrency": env_number("SPACE_MAX_CONNECTIONS", 512),
            "timeout_keep_alive": env_number("SPACE_KEEP_ALIVE", 5)}


def server_options() -> Dict[str, Any]:
    """What ``serve`` gives uvicorn beyond the address: the connection limits, the proxy settings and the HTTP
    protocol with a deadline for each request's headers and a per-client share (space/hosting/connections.py)."""
    return {"timeout_graceful_shutdown": 5, **connection_limits(), **forwarding_options(), "http": guarded_protocol()}


class ClosedAtShutdown(logging.Filter):
    """uvicorn logs each connection still open when its graceful shutdown ends (a page's or a client's event
    stream) as an ERROR with the ``CancelledError``'s traceback: one warning line instead, for each."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError):
            record.msg, record.args, record.exc_info, record.exc_text = "an open connection closed at shutdown", (), \
                None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def serve(app: FastAPI, announce: str = "", on_stop: Optional[Callable[[], None]] = None,
          **uvicorn_options: Any) -> None:
    """Run ``app`` with uvicorn until interrupted; ``announce`` (its ``{url}`` filled in) is printed once the
    socket listens, so whoever waits for it can connect at once.  ``on_stop`` runs once the server has shut down,
    before uvicorn raises the signal that stopped it again: SIGTERM's default action ends the process with no
    ``atexit``, so worker processes and their queues' semaphores must be let go here, not in a ``finally``."""
    import uvicorn

    class Server(uvicorn.Server):
        async def shutdown(self, sockets=None) -> None:
            await super().shutdown(sockets)
            if on_stop is not None:
                await asyncio.to_thread(on_stop)

    host, port = host_and_port()
    # a bounded graceful shutdown: an open event stream (a page, a Gradio client) must not hold SIGTERM forever
    server = Server(uvicorn.Config(app, **{"host": host, "port": port, "log_level": "warning",
                                           **server_options(), **uvicorn_options}))
    logs.configure()
    errors = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, ClosedAtShutdown) for f in errors.filters):  # once, however often serve() runs
        errors.addFilter(ClosedAtShutdown())

    def announce_when_listening() -> None:
        while not (server.started or server.should_exit):
            time.sleep(0.05)
        if server.started and announce:
            print(announce.format(url=f"http://{host}:{port}/"), flush=True)

    threading.Thread(target=announce_when_listening, name="announce", daemon=True).start()
    server.run()
