"""The server's connections as a slow or greedy visitor holds them (raw sockets on loopback): a half-sent request
is answered 408 at the header deadline, one address holds at most its share of connections while another is
served at once, and an upload's body that does not arrive in time is a 408.

A small app on the Space's own uvicorn settings (``space.server.server_options``): what is tested is the
connection, not the routes.
"""
from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from typing import Iterator, Tuple

import pytest
from fastapi import FastAPI, Request
from starlette.responses import JSONResponse

from space.hosting.connections import UploadDeadline

HEADER_S, SHARE, MAX_CONNECTIONS, UPLOAD_S = 1.0, 8, 16, 1.0


def _app() -> FastAPI:
    app = FastAPI()

    @app.get("/languages")
    async def languages() -> JSONResponse:
        return JSONResponse([])

    @app.post("/gradio_api/upload")
    async def upload(request: Request) -> JSONResponse:
        return JSONResponse({"bytes": len(await request.body())})

    app.add_middleware(UploadDeadline, paths=("/gradio_api/upload",), seconds=UPLOAD_S)
    return app


@pytest.fixture(scope="module")
def server() -> Iterator[Tuple[str, int]]:
    import uvicorn

    from space import server as space_server

    with pytest.MonkeyPatch.context() as patch:
        for name, value in (("SPACE_HEADER_TIMEOUT", HEADER_S), ("SPACE_CONNECTIONS_PER_CLIENT", SHARE),
                            ("SPACE_MAX_CONNECTIONS", MAX_CONNECTIONS)):
            patch.setenv(name, str(value))
        options = space_server.server_options()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    running = uvicorn.Server(uvicorn.Config(_app(), host="127.0.0.1", port=port, log_level="warning", **options))
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not running.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield "127.0.0.1", port
    running.should_exit = True
    thread.join(10)


def _get(address: Tuple[str, int], path: str, source: str = "127.0.0.2") -> Tuple[bytes, float]:
    """(the whole answer, seconds it took) of a GET from ``source`` (another loopback address: another client)."""
    start = time.perf_counter()
    with socket.create_connection(address, timeout=5, source_address=(source, 0)) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        return _read_all(sock), time.perf_counter() - start


def _read_all(sock: socket.socket) -> bytes:
    reply = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(4096):
            reply += chunk
    return reply


def test_half_sent_request_lines_hold_only_their_share_and_get_408_at_the_deadline(server):
    sockets = [socket.create_connection(server, timeout=5) for _ in range(MAX_CONNECTIONS + 4)]
    try:
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.sendall(b"GET /languages HT")  # a request line never finished
        time.sleep(0.2)
        reply, seconds = _get(server, "/languages")
        assert reply.startswith(b"HTTP/1.1 200") and seconds < 0.5, (reply[:40], seconds)
        replies = [_read_all(sock) for sock in sockets]
        held = [r for r in replies if r]
        assert len(held) == SHARE  # the others were closed at once, unanswered
        for reply in held:
            assert reply.startswith(b"HTTP/1.1 408"), reply
            assert json.loads(reply.split(b"\r\n\r\n", 1)[1]) == {
                "error": f"The request headers did not arrive within {HEADER_S:g} seconds."}
    finally:
        for sock in sockets:
            sock.close()


def test_a_trickled_request_on_a_kept_alive_connection_meets_the_deadline_too(server):
    with socket.create_connection(server, timeout=5) as sock:
        sock.sendall(b"GET /languages HTTP/1.1\r\nHost: x\r\n\r\n")
        first = sock.recv(4096)
        assert first.startswith(b"HTTP/1.1 200"), first
        start = time.perf_counter()
        sock.sendall(b"GET /languages HTTP/1.1\r\nHost: x\r\n")  # the second request's headers never end
        for _ in range(int(3 * HEADER_S / 0.2)):  # a byte every 0.2 s: each arrival must not restart the clock
            time.sleep(0.2)
            try:
                sock.sendall(b"X")
            except OSError:
                break
        reply = _read_all(sock)
        assert reply.startswith(b"HTTP/1.1 408") and time.perf_counter() - start < 2 * HEADER_S + 0.5, reply


def test_an_upload_body_past_its_deadline_is_a_408_and_a_prompt_one_is_read(server):
    head = b"POST /gradio_api/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
    with socket.create_connection(server, timeout=5) as sock:
        sock.sendall(head + b"x" * 10)  # 90 bytes never come
        reply = _read_all(sock)
    assert reply.startswith(b"HTTP/1.1 408"), reply
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1]) == {
        "error": f"The request body did not arrive within {UPLOAD_S:g} seconds."}
    with socket.create_connection(server, timeout=5) as sock:
        sock.sendall(head.replace(b"Host: x", b"Host: x\r\nConnection: close") + b"x" * 100)
        reply = _read_all(sock)
    assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b'{"bytes":100}'), reply
