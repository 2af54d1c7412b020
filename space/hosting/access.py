"""API keys, requests per minute and characters per text, with LibreTranslate's meaning; all off by default.

* ``SPACE_REQ_LIMIT=N``: each client (its API key when it sends a known one, else its address) may make N requests
  a minute (a moving window; a batch of k texts costs k); more get 429 ``Slowdown: N per 1 minute``.
* ``SPACE_CHAR_LIMIT=N``: a text longer than N characters gets 400 ``Invalid request: request (n) exceeds text
  limit (N)``.
* ``SPACE_API_KEYS=1``: keys from the server's SQLite file (``python -m transformer_hub keys add 60``); a key
  brings its own requests per minute (and characters per text, when it has one); an unknown key gets 403
  ``Invalid API key``. Sending a key stays optional unless ``SPACE_REQUIRE_API_KEY=1`` (then 400 ``Please contact
  the server operator to get an API key``, LibreTranslate's answer).
* ``SPACE_SUGGESTIONS=1``: ``POST /suggest`` stores suggestions in the same file (else 403), under the same
  per-client requests per minute as translations, until the file reaches ``SPACE_SUGGESTIONS_MAX_MB`` (default
  64; then 507 ``The suggestion store is full ...``, so a flood of suggestions cannot fill the disk); each client
  (its key, else its address, stored hashed) has a share of it, ``SPACE_SUGGESTIONS_CLIENT_MB`` (default 1; then
  429), so one client cannot fill it for everyone.

The file is ``SPACE_SUGGESTIONS_DB`` (default ``db/suggestions.db``).
"""
from __future__ import annotations

import collections
import hashlib
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable, Deque, Dict, Optional, Sequence, Tuple

from transformer_hub.store import Store, database_path

UNLIMITED = -1
WINDOW_SECONDS = 60.0
MAX_CLIENTS = 50_000  # clients remembered at once; the least recently seen is forgotten first
SUGGESTIONS_MAX_MB = 64  # the suggestion store's size cap (SPACE_SUGGESTIONS_MAX_MB)
SUGGESTIONS_CLIENT_MB = 1  # one client's share of it (SPACE_SUGGESTIONS_CLIENT_MB): 64 clients to fill it


def client_address(request) -> str:
    """The client of a Starlette request: its peer address (uvicorn takes it from X-Forwarded-For only for the
    proxies it trusts, ``--forwarded-allow-ips``), so a client cannot pick its own address to escape its limit."""
    return request.client.host if request.client else "unknown"


class AccessDenied(Exception):
    """A request refused: its HTTP status and LibreTranslate's message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def _number(name: str) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return UNLIMITED
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer (or -1 for no limit), got {raw!r}") from None
    if value < 1 and value != UNLIMITED:
        raise ValueError(f"{name} must be at least 1 (or -1 for no limit), got {value}")
    return value


@dataclass(frozen=True)
class AccessSettings:
    req_limit: int = UNLIMITED     # requests per client per minute
    char_limit: int = UNLIMITED    # characters per text
    api_keys: bool = False
    require_key: bool = False
    suggestions: bool = False
    db_path: str = ""
    suggestions_max_mb: float = SUGGESTIONS_MAX_MB  # the database's size past which suggestions get 507
    suggestions_client_mb: float = SUGGESTIONS_CLIENT_MB  # one client's texts past which its suggestions get 429

    @classmethod
    def from_env(cls) -> "AccessSettings":
        cap, share = _number("SPACE_SUGGESTIONS_MAX_MB"), _number("SPACE_SUGGESTIONS_CLIENT_MB")
        return cls(_number("SPACE_REQ_LIMIT"), _number("SPACE_CHAR_LIMIT"), _flag("SPACE_API_KEYS"),
                   _flag("SPACE_REQUIRE_API_KEY"), _flag("SPACE_SUGGESTIONS"), str(database_path()),
                   SUGGESTIONS_MAX_MB if cap == UNLIMITED else cap,
                   SUGGESTIONS_CLIENT_MB if share == UNLIMITED else share)


class MovingWindow:
    """Requests per client over the last ``window`` seconds (bounded memory: ``max_clients``)."""

    def __init__(self, window: float = WINDOW_SECONDS, max_clients: int = MAX_CLIENTS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.window, self.max_clients, self.clock = window, max_clients, clock
        self._hits: "collections.OrderedDict[str, Deque[Tuple[float, int]]]" = collections.OrderedDict()
        self._lock = threading.Lock()

    def hit(self, client: str, limit: int, cost: int = 1) -> bool:
        """Count ``cost`` requests for ``client`` if that keeps it within ``limit``; False (nothing counted) if not."""
        now = self.clock()
        with self._lock:
            hits = self._hits.pop(client, None) or collections.deque()
            while hits and hits[0][0] <= now - self.window:
                hits.popleft()
            allowed = sum(c for _, c in hits) + cost <= limit
            if allowed:
                hits.append((now, cost))
            if hits:
                self._hits[client] = hits  # most recently seen last
            while len(self._hits) > self.max_clients:
                self._hits.popitem(last=False)
            return allowed


class Access:
    """The checks of one server: ``check`` before a request's work, ``suggest`` for ``/suggest``."""

    def __init__(self, settings: Optional[AccessSettings] = None, store: Optional[Store] = None,
                 window: Optional[MovingWindow] = None) -> None:
        self.settings = settings or AccessSettings.from_env()
        need_store = self.settings.api_keys or self.settings.suggestions
        self.store = store if store is not None or not need_store else Store(self.settings.db_path)
        self.window = window or MovingWindow()

    def check(self, key: Optional[str], client: str, texts: Sequence[str] = (), cost: int = 1) -> int:
        """Admit a request from ``client`` (with API key ``key`` or None) carrying ``texts``; returns the character
        limit that applies to it (-1: none). Raises ``AccessDenied``."""
        s = self.settings
        limits = None
        if s.api_keys and key:
            limits = self.store.lookup(key)
            if limits is None:
                raise AccessDenied(403, "Invalid API key")
        elif s.api_keys and s.require_key:
            raise AccessDenied(400, "Please contact the server operator to get an API key")
        req_limit = limits.req_limit if limits is not None else s.req_limit
        if req_limit != UNLIMITED:
            if not self.window.hit(self.who(key, client), req_limit, max(1, cost)):
                raise AccessDenied(429, f"Slowdown: {req_limit} per 1 minute")
        char_limit = limits.char_limit if limits is not None and limits.char_limit is not None else s.char_limit
        if char_limit != UNLIMITED:
            for text in texts:
                if len(text) > char_limit:
                    raise AccessDenied(400, f"Invalid request: request ({len(text)}) exceeds text limit "
                                            f"({char_limit})")
        return char_limit

    def who(self, key: Optional[str], client: str) -> str:
        """Whom a request counts against: its API key (``check`` has found it known), else its address."""
        return f"key:{key}" if self.settings.api_keys and key else f"ip:{client}"

    def suggest(self, q: str, s: str, source: str, target: str, model: Optional[str] = None,
                who: str = "") -> None:
        """Store a suggestion from ``who`` (``Access.who``), or 403 as LibreTranslate when suggestions are off,
        507 once the store is full, 429 once ``who``'s share of it is."""
        if not self.settings.suggestions:
            raise AccessDenied(403, "Suggestions are disabled on this server.")
        size, cap, share = len(q.encode()) + len(s.encode()), self.settings.suggestions_max_mb, \
            self.settings.suggestions_client_mb
        if self.store.size_bytes() + size > cap * (1 << 20):
            raise AccessDenied(507, f"The suggestion store is full (its limit is {cap:g} MB): no more suggestions "
                                    "are accepted until the server's operator exports and clears them.")
        client = hashlib.sha256(who.encode("utf-8", "surrogatepass")).hexdigest()[:24]  # no address kept as such
        if self.store.client_bytes(client) + size > share * (1 << 20):
            raise AccessDenied(429, f"Slowdown: your suggestions have used your share of the store ({share:g} MB "
                                    "per client)")
        self.store.add_suggestion(q, s, source, target, model, client)

    @property
    def key_required(self) -> bool:
        return self.settings.api_keys and self.settings.require_key

    def frontend(self) -> Dict[str, object]:
        """The access part of ``/frontend/settings``."""
        return {"charLimit": self.settings.char_limit, "apiKeys": self.settings.api_keys,
                "keyRequired": self.key_required, "suggestions": self.settings.suggestions}
