"""Deadlines and shares at the connection, where uvicorn has none: a request's headers must arrive within
``SPACE_HEADER_TIMEOUT`` seconds, one client holds at most ``SPACE_CONNECTIONS_PER_CLIENT`` connections, and an
upload's body must arrive within ``SPACE_UPLOAD_TIMEOUT`` seconds.

    options = {"http": guarded_protocol(), ...}         # uvicorn.Config(app, **options)
    app = UploadDeadline(app, ("/gradio_api/upload",))  # the body of an upload within its deadline, else 408

uvicorn stops an idle kept-alive connection, but once a byte of a request has arrived it waits for the rest
forever: 520 half-sent request lines held every connection ``SPACE_MAX_CONNECTIONS`` allows, and every route
answered 503 until they went. Now each is answered 408 and closed at its deadline, and one address cannot hold
more than its share meanwhile. The share does not apply to the proxies ``SPACE_FORWARDED_ALLOW_IPS`` names
(every client behind them shares their address; such a proxy reads a request whole before it forwards it).
"""
from __future__ import annotations

import ipaddress
import json
import os
from typing import Any, Dict, Optional, Sequence

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER_TIMEOUT_ENV, PER_CLIENT_ENV, UPLOAD_TIMEOUT_ENV = ("SPACE_HEADER_TIMEOUT", "SPACE_CONNECTIONS_PER_CLIENT",
                                                          "SPACE_UPLOAD_TIMEOUT")
HEADER_TIMEOUT = 10.0   # seconds from a request's first byte (or the connection's start) to its last header
PER_CLIENT = 32         # connections one address holds at once (a browser opens 6 per host)
UPLOAD_TIMEOUT = 30.0   # seconds an upload's body may take (the largest allowed, 100 kB, at ~3 kB/s)


def _number(name: str, default: Any) -> Any:
    raw = os.environ.get(name, "").strip()
    try:
        return max(type(default)(raw), 1) if raw else default
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None


def timed_out_body(what: str, seconds: float) -> bytes:
    """The 408's body, in the REST routes' ``{"error": ...}`` shape."""
    return json.dumps({"error": f"The request {what} did not arrive within {seconds:g} seconds."}).encode()


class _Trusted:
    """Addresses exempt from the per-client share: uvicorn's ``forwarded_allow_ips`` (``*``, addresses, networks)."""

    def __init__(self, spec: str) -> None:
        items = [item.strip() for item in spec.split(",") if item.strip()]
        self.everyone = "*" in items
        self.networks = []
        for item in items:
            try:
                self.networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                pass  # a name uvicorn matches literally (a unix socket's path): never a peer's address here

    def __contains__(self, host: str) -> bool:
        if self.everyone:
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in network for network in self.networks)


def guarded_protocol(base: Optional[type] = None, header_timeout: Optional[float] = None,
                     per_client: Optional[int] = None, trusted: Optional[str] = None) -> type:
    """uvicorn's HTTP protocol (``base``: the one ``http="auto"`` picks) with the header deadline and the
    per-client share (defaults: the environment's, else ``HEADER_TIMEOUT`` and ``PER_CLIENT``)."""
    if base is None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol as base  # httptools when installed, else h11
    header_s = header_timeout if header_timeout is not None else _number(HEADER_TIMEOUT_ENV, HEADER_TIMEOUT)
    share = per_client if per_client is not None else _number(PER_CLIENT_ENV, PER_CLIENT)
    exempt = _Trusted(trusted if trusted is not None else os.environ.get("SPACE_FORWARDED_ALLOW_IPS", ""))
    open_by_host: Dict[str, int] = {}  # this server's connections by peer address (the event loop's thread only)

    class Guarded(base):  # type: ignore[misc, valid-type]
        _deadline: Any = None
        _deadline_cycle: Any = None
        _host = ""

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._host = (self.client or ("",))[0] or ""
            open_by_host[self._host] = open_by_host.get(self._host, 0) + 1
            if open_by_host[self._host] > share and self._host not in exempt:
                transport.close()  # over its share: closed before a byte is read
                return
            self._arm()

        def data_received(self, data: bytes) -> None:
            waiting = self.cycle is None or self.cycle.response_complete  # between requests: headers to come
            if waiting and (self._deadline is None or self._deadline_cycle is not self.cycle):
                self._arm()
            super().data_received(data)

        def connection_lost(self, exc: Optional[Exception]) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            left = open_by_host.get(self._host, 1) - 1
            if left > 0:
                open_by_host[self._host] = left
            else:
                open_by_host.pop(self._host, None)
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline_cycle = self.cycle
            self._deadline = self.loop.call_later(header_s, self._expire)

        def _expire(self) -> None:
            self._deadline = None
            transport = self.transport
            # a request whose headers came started a new cycle; an upgraded connection (a websocket) is not ours
            if self.cycle is not self._deadline_cycle or transport.is_closing() or transport.get_protocol() is not self:
                return
            body = timed_out_body("headers", header_s)
            transport.write(b"HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nConnection: close"
                            b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            transport.close()

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded


class UploadDeadline:
    """The body of a request to one of ``paths`` must arrive within ``seconds`` (default: the environment's, else
    ``UPLOAD_TIMEOUT``); past it the app reads a disconnect and the client gets 408, whatever the app answers."""

    def __init__(self, app: ASGIApp, paths: Sequence[str], seconds: Optional[float] = None) -> None:
        self.app, self.paths = app, tuple(paths)
        self.seconds = seconds if seconds is not None else _number(UPLOAD_TIMEOUT_ENV, UPLOAD_TIMEOUT)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") not in self.paths:
            await self.app(scope, receive, send)
            return
        deadline = anyio.current_time() + self.seconds
        state = {"body_done": False, "expired": False, "started": False}

        async def timed_receive() -> Message:
            if state["body_done"] or state["expired"]:
                return await receive()
            with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                message = await receive()
                state["body_done"] = message["type"] != "http.request" or not message.get("more_body", False)
                return message
            state["expired"] = True
            return {"type": "http.disconnect"}

        async def guarded_send(message: Message) -> None:
            if state["expired"] and not state["started"]:
                return  # the app's answer to the disconnect it was handed: the client gets the 408 below
            state["started"] = state["started"] or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, timed_receive, guarded_send)
        except Exception:  # noqa: BLE001 - the app's error about the body cut short: answered below
            if not state["expired"]:
                raise
        if state["expired"] and not state["started"]:
            body = timed_out_body("body", self.seconds)
            await send({"type": "http.response.start", "status": 408,
                        "headers": [(b"content-type", b"application/json"), (b"connection", b"close"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
