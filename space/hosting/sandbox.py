"""A visitor's document read and written in a worker process of its own, within a wall-clock and a memory budget.

The format libraries build a Python object per element of a file the visitor chose; whatever the limits counted
while parsing (``transformer_hub.formats.budget``) let through, the work on one document is bounded from outside
the parse too: the worker's address space is capped (``RLIMIT_AS``: its size at start plus ``memory_mb``), its
time is the parent's to watch, and it is killed when the budget ends or the client leaves (``cancelled``), so
the server's own memory never grows with a document and what the worker used goes back to the OS with it.

The worker keeps the parsed document while the parent translates its texts (the models live in the server), and
does there what costs as much as the document's text before anything is decoded: its sentences cut and counted,
their domains told (``formats.cut_document``), so the server's own memory and time per document stay small whatever
the text holds, and a client that leaves stops that work too:

    with DocumentWorker(data, ".docx", max_bytes, seconds=10, memory_mb=512, cancelled=event.is_set,
                        max_chars=1_000_000) as worker:
        texts = worker.texts()            # DocumentError for a file refused, a budget passed, text past max_chars
        cut = worker.cut("en", max_sentences=1000, classifier=c, domains=("captions", "software"))
        data = worker.write(translated)   # the document written back

Workers fork from a ``forkserver`` started once with the format libraries imported (a fork of the server itself,
with its threads, could inherit a held lock), so a worker starts in milliseconds.  A worker needs nothing of the
server's main module, but multiprocessing runs that module again in every child whose ``__main__`` is not it
(Python 3.11's forkserver never receives the path its ``"__main__"`` preload needs): ``python app.py`` imported
Gradio and the Space anew for each document, seconds of CPU and 300 MB each.  So the forkserver holds a stand-in
``__main__`` naming the server's main file (``_stand_in_main``), and a worker is only a fork.
"""
from __future__ import annotations

import dataclasses
import importlib.machinery
import logging
import multiprocessing
import os
import resource
import sys
import time
import types
from typing import Any, Callable, List, Optional, Sequence

from transformer_hub.formats import Cut, DocumentError, Translated, cut_document, read_document
from transformer_hub.formats.budget import out_of_memory

logger = logging.getLogger(__name__)
POLL_SECONDS = 0.05  # how often the parent looks at the budget and the client while it waits
MEMORY_EXIT = 75  # the worker's exit code when its memory budget ran out before it could say so
_CONTEXT: Optional[Any] = None
_DONE = {"read": "read", "cut": "cut into sentences", "write": "written"}


MAIN_ENV = "TRANSFORMER_HUB_SANDBOX_MAIN"  # the server's main file, for the forkserver's stand-in


def _main_name() -> Optional[str]:
    """How multiprocessing names the main module to a child: ``name:`` its module (``-m``), ``path:`` its file
    (absolute, normalised, as ``multiprocessing.spawn`` writes it); None where there is neither (``-c``)."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:
        return f"name:{name}"
    path = getattr(main, "__file__", None)
    if path is None:
        return None
    return "path:" + os.path.normpath(os.path.join(multiprocessing.process.ORIGINAL_DIR or os.getcwd(), path))


def _stand_in_main() -> None:
    """In the forkserver (its ``__main__`` has no file): a ``__main__`` named as the server's, so each worker's
    start finds it "already imported" and does not run it again. Nothing else; in the server, a no-op."""
    kind, _, value = os.environ.get(MAIN_ENV, "").partition(":")
    main = sys.modules.get("__main__")
    if not value or getattr(main, "__file__", None) is not None or getattr(main, "__spec__", None) is not None:
        return
    stand_in = types.ModuleType("__mp_main__")
    if kind == "name":
        stand_in.__spec__ = importlib.machinery.ModuleSpec(value, None)
    else:
        stand_in.__file__ = value
    sys.modules["__main__"] = sys.modules["__mp_main__"] = stand_in


def _context():
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = multiprocessing.get_context("forkserver")
        main = _main_name()
        if main is not None:  # read by _stand_in_main when the forkserver imports this module
            os.environ[MAIN_ENV] = main
        _CONTEXT.set_forkserver_preload(["transformer_hub.formats", "space.hosting.sandbox"])
    return _CONTEXT


def _address_space() -> int:
    """This process's virtual memory size in bytes (Linux's /proc; 0 where there is none)."""
    try:
        with open("/proc/self/statm") as stats:
            return int(stats.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _limit_memory(memory_mb: int) -> None:
    limit = _address_space() + (memory_mb << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _say_memory(conn) -> None:
    """Tell the parent the memory budget ran out; when even that message cannot be made, the exit code says it."""
    try:
        conn.send(("memory", ""))
    except MemoryError:
        os._exit(MEMORY_EXIT)


def _work(conn, data: bytes, suffix: str, max_bytes: int, memory_mb: int, options: dict,
          max_chars: Optional[int] = None) -> None:
    """The worker: read, check the text's size, send the texts; then cut them into sentences (and tell their
    domains) when asked; write the translations it is sent, send the file."""
    try:
        _limit_memory(memory_mb)
        document = read_document(data, suffix, max_bytes, **options)
        size = sum(len(text) for text in document.texts)
        if max_chars is not None and size > max_chars:  # before any of it is cut or scored
            raise DocumentError(f"The document holds {size:,} characters of text, more than one document may "
                                f"({max_chars:,}): split it into smaller documents.")
        conn.send(("texts", document.texts))
        kind, asked = conn.recv()
        if kind == "cut":
            conn.send(("cut", cut_document(document.texts, **asked)))
            kind, asked = conn.recv()
        conn.send(("data", document.write(asked)))
    except DocumentError as exc:
        conn.send(("refused", str(exc)))
    except MemoryError:
        _say_memory(conn)
    except RecursionError:
        conn.send(("refused", "The document nests its elements too deeply to be read: simplify its structure."))
    except EOFError:  # the parent has gone: nothing is waiting for the answer
        pass
    except Exception as exc:  # noqa: BLE001 - a library choking on the visitor's bytes: their file, told so
        if out_of_memory(exc):  # a library's own lxml parse past the cap
            _say_memory(conn)
        else:
            conn.send(("broken", f"{type(exc).__name__}: {exc}"))


class DocumentWorker:
    """One document's worker process (see the module); ``close`` (or leaving the ``with``) kills it."""

    def __init__(self, data: bytes, suffix: str, max_bytes: int, seconds: float, memory_mb: int,
                 cancelled: Optional[Callable[[], bool]] = None, max_chars: Optional[int] = None,
                 **options: Any) -> None:
        self.seconds, self.memory_mb, self.cancelled = seconds, memory_mb, cancelled or (lambda: False)
        self.used = 0.0  # the worker's seconds so far (not the parent's translating in between)
        self._parent, child = _context().Pipe()
        self.process = _context().Process(target=_work, args=(child, bytes(data), suffix, max_bytes, memory_mb,
                                                                 options, max_chars),
                                          daemon=True, name="document-worker")
        self.process.start()
        child.close()

    def texts(self) -> List[str]:
        """The document's texts, as its format reads them."""
        return self._answer("read")

    def cut(self, lang: str, max_sentences: Optional[int] = None, classifier: Any = None,
            domains: Sequence[str] = ()) -> Cut:
        """The texts cut into sentences by ``lang``'s rules and counted against ``max_sentences``, and with a
        ``classifier`` each sentence's domain among ``domains`` told, in the worker (``formats.cut_document``): at
        most once, before ``write``."""
        self._parent.send(("cut", {"lang": lang, "max_sentences": max_sentences, "classifier": classifier,
                                   "domains": tuple(domains)}))
        return self._answer("cut")

    def write(self, done: List[Translated]) -> bytes:
        """The document written back with ``done`` (one ``Translated`` per text; their records stay here)."""
        self._parent.send(("write", [dataclasses.replace(t, result=None) for t in done]))
        return self._answer("write")

    def _answer(self, doing: str) -> Any:
        start = time.monotonic()
        try:
            while self.cancelled() or not self._parent.poll(POLL_SECONDS):  # a client gone: no answer waited for
                if self.cancelled():
                    raise DocumentError("The client left before the document was translated.")
                if self.used + time.monotonic() - start > self.seconds:
                    raise DocumentError(f"The document took more than {self.seconds:g} seconds to {doing}, the "
                                        "limit: it is too complex to translate here; split it into smaller ones.")
                if not self.process.is_alive():
                    self._died(doing)
            kind, value = self._parent.recv()
        except (EOFError, OSError):
            self._died(doing)
        except DocumentError:
            self.close()
            raise
        finally:
            self.used += time.monotonic() - start
        return self._reply(kind, value, doing)

    def _died(self, doing: str) -> None:
        """The worker ended without an answer: killed by a signal (a C library failing an allocation past the
        memory cap aborts or faults) or ``MEMORY_EXIT`` is the document's cost; any other end the server's fault."""
        self.process.join(5)
        code = self.process.exitcode
        self.close()
        if code is not None and (code < 0 or code == MEMORY_EXIT):
            raise DocumentError(f"The document could not be {_DONE[doing]} within its memory budget of "
                                f"{self.memory_mb:,} MB: it is too complex to translate here.")
        raise RuntimeError(f"the document worker stopped without an answer (exit code {code})")

    def _reply(self, kind: str, value: Any, doing: str) -> Any:
        if kind in ("texts", "cut", "data"):
            return value
        self.close()
        if kind == "memory":
            raise DocumentError(f"The document needs more than its memory budget of {self.memory_mb:,} MB to be "
                                f"{_DONE[doing]}: it is too complex to translate here; split it into smaller ones.")
        if kind == "broken":
            logger.warning("a document the format's library could not %s: %s", doing, value)
            raise DocumentError(f"The file could not be read as its format: it is damaged or unusual ({value}).")
        raise DocumentError(value)

    def close(self) -> None:
        """Kill the worker (if it still runs) and wait for it, so its memory goes back to the OS."""
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self._parent.close()

    def __enter__(self) -> "DocumentWorker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_stand_in_main()
