"""The server's one SQLite file: users' suggested translations and the API keys (``sqlite3``, nothing to install).

    store = Store("suggestions.db")
    store.add_suggestion("A dog runs.", "Ein Hund rennt.", "en", "de", model="en-de")
    store.export("feedback/")            # feedback/en-de/train.en, feedback/en-de/train.de: aligned lines
    key = store.add_key(req_limit=60)    # a new random key allowed 60 requests a minute
    store.lookup(key)                    # KeyLimits(req_limit=60, char_limit=None); None for an unknown key

The tables follow LibreTranslate's (``suggestions``: q, s, source, target; ``api_keys``: api_key, req_limit,
char_limit), with the time and the model that translated added to each suggestion. Every method may be called
from any thread (one connection, one lock; each write is committed at once).
"""
from __future__ import annotations

import os
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

DB_ENV = "SPACE_SUGGESTIONS_DB"
DEFAULT_DB = "db/suggestions.db"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS suggestions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    q TEXT NOT NULL, s TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL,
    model TEXT, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS api_keys (
    api_key TEXT PRIMARY KEY, req_limit INTEGER NOT NULL, char_limit INTEGER, created REAL NOT NULL);
"""


def database_path() -> Path:
    """The server's SQLite file: ``$SPACE_SUGGESTIONS_DB``, else ``db/suggestions.db`` (relative to where it runs)."""
    return Path(os.environ.get(DB_ENV) or DEFAULT_DB)


class KeyLimits(NamedTuple):
    req_limit: int               # requests per minute
    char_limit: Optional[int]    # characters per text; None: the server's own limit


@dataclass(frozen=True)
class Suggestion:
    q: str
    s: str
    source: str
    target: str
    model: Optional[str]
    created: float


class Store:
    """Suggestions and API keys in the SQLite file ``path`` (created with its tables when missing)."""

    def __init__(self, path: os.PathLike) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), check_same_thread=False)
            self._db.executescript(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(suggestions)")}
            if "client" not in columns:  # a file from before suggestions named their client
                self._db.execute("ALTER TABLE suggestions ADD COLUMN client TEXT")
            self._db.execute("CREATE INDEX IF NOT EXISTS suggestions_by_client ON suggestions (client)")
            self._db.commit()
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"{self.path} is not a database this server can use: {exc}") from None
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _write(self, sql: str, args: Tuple) -> sqlite3.Cursor:
        with self._lock:
            cursor = self._db.execute(sql, args)
            self._db.commit()
            return cursor

    def _read(self, sql: str, args: Tuple = ()) -> List[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def size_bytes(self) -> int:
        """The database's size in bytes (its pages in use and free: what it takes on disk)."""
        with self._lock:
            (pages,), (size,) = self._db.execute("PRAGMA page_count").fetchone(), \
                self._db.execute("PRAGMA page_size").fetchone()
        return pages * size

    # ------------------------------------------------------------------ suggestions
    def add_suggestion(self, q: str, s: str, source: str, target: str, model: Optional[str] = None,
                       client: Optional[str] = None) -> int:
        """Store one suggested translation ``s`` of ``q`` (from ``client``, an opaque name); returns its row id."""
        return self._write("INSERT INTO suggestions (q, s, source, target, model, created, client) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?)", (q, s, source, target, model, time.time(), client)).lastrowid

    def client_bytes(self, client: str) -> int:
        """The UTF-8 bytes of the texts (``q`` and ``s``) of ``client``'s suggestions."""
        (total,), = self._read("SELECT COALESCE(SUM(LENGTH(CAST(q AS BLOB)) + LENGTH(CAST(s AS BLOB))), 0) "
                               "FROM suggestions WHERE client = ?", (client,))
        return int(total)

    def suggestions(self) -> List[Suggestion]:
        """Every suggestion, oldest first."""
        rows = self._read("SELECT q, s, source, target, model, created FROM suggestions ORDER BY id")
        return [Suggestion(*row) for row in rows]

    def export(self, out: os.PathLike) -> Dict[Tuple[str, str], int]:
        """Write ``out/{source}-{target}/train.{source}`` and ``train.{target}`` (aligned, one pair a line; a text
        of several lines gives one pair per line when both sides have as many, else one joined pair; the latest
        suggestion for a text wins). Returns the pairs written per direction."""
        pairs: Dict[Tuple[str, str], Dict[str, str]] = {}
        for row in self.suggestions():
            for q, s in _line_pairs(row.q, row.s):
                pairs.setdefault((row.source, row.target), {})[q] = s
        written = {}
        for (source, target), mine in sorted(pairs.items()):
            folder = Path(out) / f"{source}-{target}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"train.{source}").write_text("".join(q + "\n" for q in mine), encoding="utf-8")
            (folder / f"train.{target}").write_text("".join(s + "\n" for s in mine.values()), encoding="utf-8")
            written[(source, target)] = len(mine)
        return written

    # ------------------------------------------------------------------ API keys
    def add_key(self, req_limit: int, key: Optional[str] = None, char_limit: Optional[int] = None) -> str:
        """Add (or replace) an API key allowed ``req_limit`` requests a minute; a random one when ``key`` is None."""
        if req_limit < 1:
            raise ValueError(f"the request limit must be at least 1 a minute, got {req_limit}")
        if char_limit is not None and char_limit < 1:
            raise ValueError(f"the character limit must be at least 1, got {char_limit}")
        key = key if key is not None else secrets.token_urlsafe(24)
        if not key or any(ch.isspace() for ch in key):
            raise ValueError("an API key must be a non-empty word without spaces")
        self._write("INSERT OR REPLACE INTO api_keys (api_key, req_limit, char_limit, created) VALUES (?, ?, ?, ?)",
                    (key, req_limit, char_limit, time.time()))
        return key

    def remove_key(self, key: str) -> bool:
        """Remove an API key; False when there was none."""
        return self._write("DELETE FROM api_keys WHERE api_key = ?", (key,)).rowcount > 0

    def keys(self) -> List[Tuple[str, KeyLimits]]:
        rows = self._read("SELECT api_key, req_limit, char_limit FROM api_keys ORDER BY created")
        return [(key, KeyLimits(req, chars)) for key, req, chars in rows]

    def lookup(self, key: str) -> Optional[KeyLimits]:
        rows = self._read("SELECT req_limit, char_limit FROM api_keys WHERE api_key = ?", (key,))
        return KeyLimits(*rows[0]) if rows else None


def _line_pairs(q: str, s: str) -> List[Tuple[str, str]]:
    sources = [" ".join(line.split()) for line in q.splitlines() if line.strip()]
    targets = [" ".join(line.split()) for line in s.splitlines() if line.strip()]
    if not sources or not targets:
        return []
    if len(sources) == len(targets):
        return list(zip(sources, targets))
    return [(" ".join(sources), " ".join(targets))]
