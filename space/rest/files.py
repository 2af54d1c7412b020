"""Documents for the page's document box and ``POST /translate_file``: one code path for every format registered in
``transformer_hub.formats`` (``DOCUMENT_FORMATS``), and the server's own folder of translations.

``translate_file`` detects the language when asked ("auto": from the document's own texts, by the text pipeline's
detection), hands the format's sentences to the text pipeline (``translate_document_texts``: the model for the
direction, the shared decoder, ``limits.document_chunk`` at a time, each step reported to ``progress``) and writes
the document back with its structure kept.

``OutputFolder`` keeps the translations that ``GET /download_file/<name>`` serves: a folder of its own, each file
under a random name (never one a client chose), forgotten and deleted ``SPACE_FILE_TTL`` seconds (default 1800,
LibreTranslate's 30 minutes) after it was written; at most ``max_files`` are kept (the oldest go first).
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from transformer_hub.decoding import DecodingConfig
from transformer_hub.export.engine import CHOICES as ENGINE_CHOICES
from transformer_hub.formats import DocumentError, format_of, translate_document_texts
from transformer_hub.text.pipeline import detect_sources
from transformer_hub.text.routing import domain_counts

from ..hosting.sandbox import DocumentWorker
from ..serving import service
from ..serving.context import SpaceContext
from ..serving.languages import AUTO, LANGUAGES
from ..serving.leaving import client_left

FILE_TTL_ENV = "SPACE_FILE_TTL"
FILE_TTL = 1800.0
DETECT_CHARS = 2000  # the document's first characters are what its language is detected from
UNSURE_SHOWN = 5  # unsure sentences named in the page's note and the REST answer (all are counted)
Progress = Callable[..., Any]


@dataclass(frozen=True)
class Translation:
    """A translated document: its bytes, its file name, and what ran (for the page's note)."""

    data: bytes
    name: str
    model: str
    engine: str
    source: str
    sentences: int
    seconds: float
    unsure: Tuple[Dict[str, Any], ...] = ()  # every sentence the model is unsure of: source, translation, reasons
    domain: Optional[str] = None  # the domain most of its sentences were read as (models trained with domains),
    domain_confidence: Optional[float] = None  # the classifier's mean probability over them,
    domains: Dict[str, int] = field(default_factory=dict)  # and how many were read as each (several: mixed)
    trained_on: Tuple[str, ...] = ()  # the domains ``model`` was trained with


def _detected(ctx: SpaceContext, texts: List[str], source: str, target: str) -> str:
    if source != "auto":
        return source
    text = "\n".join(texts)[:DETECT_CHARS]
    if not text.strip():
        raise DocumentError("The document has no text to translate.")
    # the pipeline's detection over the document's opening (sentence by sentence, short ones would be guesses)
    (code,), _, _ = detect_sources(service.SpaceModels(ctx), [text], source, target if target in LANGUAGES else None)
    return code


def translate_file(ctx: SpaceContext, data: bytes, filename: str, source: str, target: str,
                   model: Optional[str] = None, engine: str = service.TRANSLATE_ENGINE,
                   progress: Optional[Progress] = None, config: Optional[DecodingConfig] = None,
                   quality: str = "fast", cancelled: Optional[Callable[[], bool]] = None,
                   domain: Optional[str] = AUTO) -> Translation:
    """``data`` (the file ``filename``) translated from ``source`` (or "auto") into ``target`` (``config``:
    the decoding options, default the REST routes' beam search; ``quality``: "fast" or "best", the pipeline's;
    ``domain``: one of the models' domains, or "auto": each sentence's, or for a short one its paragraph's or the
    whole document's, ``transformer_hub.text.routing``).
    The file is read and written in a worker process within ``limits.document_seconds`` and
    ``limits.document_memory_mb`` (``space/hosting/sandbox.py``), killed at once when ``cancelled()`` (the client
    left). Raises ``DocumentError`` (a ``ValueError``) for a file that cannot be translated, ``RequestError`` for a
    bad choice."""
    stem, suffix = os.path.splitext(os.path.basename(filename or ""))
    format_of(suffix)  # a DocumentError naming the formats there are
    cancelled = client_left(cancelled) or (lambda: False)  # a page's event: its visitor's session (leaving.py)
    limits = ctx.limits
    # the text's size is checked in the worker, its sentences cut and counted, and their domains told there: none
    # of it runs in this process (a 35 kB .epub held 12 MB of text: 21 s and +860 MB here before its sentences were
    # counted; a .docx of 40,000 sentences was cut here before the 1,000 were checked)
    with DocumentWorker(data, suffix, limits.max_file_bytes, limits.document_seconds, limits.document_memory_mb,
                        cancelled, max_chars=limits.max_file_sentences * limits.max_chars, tgt_lang=target) as worker:
        texts = worker.texts()
        source = _detected(ctx, texts, source, target)
        config = config or service.decoding_config(ctx, "beam", 4, 0.6)
        models = service.SpaceModels(ctx, model, engine, cancelled=cancelled)
        classifier = models.domain_classifier() if domain == AUTO else None
        cut = worker.cut(source, limits.max_file_sentences, classifier, models.domains())

        def on_chunk(done: int, total: int) -> None:
            if cancelled():  # the client left: no more sentences decoded for nobody
                raise DocumentError("The client left before the document was translated.")
            if progress is not None:
                progress((done, total), desc="Translating", unit="sentences")

        start = time.perf_counter()
        done = translate_document_texts(texts, models, source, limits.max_file_sentences, tgt_lang=target,
                                        config=config, on_chunk=on_chunk, chunk_size=max(1, limits.document_chunk),
                                        quality=quality, domain=domain, cut=cut)
        seconds = time.perf_counter() - start
        translated = worker.write(done)
    domain, confidence, counts = document_domain(done)
    ran = [t.result for t in done if t.result is not None and t.result.model is not None]
    ran.sort(key=lambda r: r.domain != domain)  # the model and engine of the document's domain first
    if ran:
        model, engine = ran[0].model, ran[0].engine
    else:  # nothing was decoded: the model and engine that would have run
        model = models.choose(source, target, quality)
        engine = service.resolve_engine(ctx, service.pick_engine(engine, ENGINE_CHOICES), model, config)
    sentences = sum(len(t.spans) for t in done)
    safe_stem = re.sub(r"[^\w.-]+", "_", stem)[:80].strip("._") or "document"
    return Translation(translated, f"{safe_stem}.{target}{suffix.lower()}", model, engine, source, sentences,
                       seconds, unsure_sentences(ctx, done), domain, confidence, counts,
                       tuple(ctx.store.config(model).domains or ()) if model in ctx.store.specs else ())


def document_domain(done: list) -> Tuple[Optional[str], Optional[float], Dict[str, int]]:
    """The domain most of the document's sentences (``done``: one ``Translated`` per text) were read as, the
    classifier's mean probability over them (None: given), and how many were read as each domain."""
    results = [t.result for t in done if t.result is not None]
    counts = domain_counts(results)
    main = next(iter(counts), None)
    told = [s.domain_confidence for r in results for s in (r.sentences if r.sentences is not None else [r])
            if s.domain == main and s.domain_confidence is not None]
    return main, (sum(told) / len(told) if told else None), counts


def unsure_sentences(ctx: SpaceContext, done: list) -> Tuple[Dict[str, str], ...]:
    """The sentences of ``done`` (one ``Translated`` per text) the model is unsure of (``service.unsure_sentences``)."""
    return tuple(s for text in done if text.result is not None for s in service.unsure_sentences(ctx, text.result))


def unsure_summary(done: Translation) -> Optional[Dict[str, Any]]:
    """REST's ``unsure`` field of ``/translate_file``: how many sentences are unsure, of how many, the first few
    (each with its reasons), and every reason found."""
    if not done.unsure:
        return None
    return {"count": len(done.unsure), "sentences": done.sentences, "first": list(done.unsure[:UNSURE_SHOWN]),
            "reasons": service.unsure_reasons(done.unsure)}


class OutputFolder:
    """Translated files under random names in a folder of their own, each deleted ``ttl`` seconds after."""

    def __init__(self, root: Optional[os.PathLike] = None, ttl: Optional[float] = None, max_files: int = 500,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="translated-files-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.ttl = ttl if ttl is not None else _ttl_from_env()
        self.max_files, self.clock = max_files, clock
        self._files: Dict[str, Tuple[float, str]] = {}  # random name -> (expiry, the name to download it as)
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def start_sweeping(self, every: Optional[float] = None) -> None:
        """Delete expired files every ``every`` seconds (default: a tenth of the TTL, 1 to 60 s) from a thread
        of its own, so a quiet server deletes them too."""
        every = every if every is not None else min(60.0, max(1.0, self.ttl / 10))

        def sweep() -> None:
            while not self._stop.wait(every):
                self.expire()

        threading.Thread(target=sweep, name="translated-files-sweeper", daemon=True).start()

    def add(self, data: bytes, download_name: str) -> str:
        """Keep ``data``; returns the random name it is served under (its extension kept)."""
        name = secrets.token_urlsafe(24) + os.path.splitext(download_name)[1].lower()
        (self.root / name).write_bytes(data)
        with self._lock:
            self._files[name] = (self.clock() + self.ttl, download_name)
        self.expire()
        return name

    def get(self, name: str) -> Optional[Tuple[Path, str]]:
        """(path, download name) of a live file, or None: only names this folder gave out are ever looked up."""
        self.expire()
        with self._lock:
            entry = self._files.get(name)
        return (self.root / name, entry[1]) if entry is not None else None

    def expire(self) -> None:
        """Delete expired files, and the oldest beyond ``max_files``."""
        now = self.clock()
        with self._lock:
            order = sorted(self._files, key=lambda n: self._files[n][0])
            gone = [n for n in order if self._files[n][0] <= now]
            gone += [n for n in order if n not in gone][:max(0, len(order) - len(gone) - self.max_files)]
            for name in gone:
                del self._files[name]
        for name in gone:
            (self.root / name).unlink(missing_ok=True)

    def close(self) -> None:
        self._stop.set()
        shutil.rmtree(self.root, ignore_errors=True)


def _ttl_from_env() -> float:
    raw = os.environ.get(FILE_TTL_ENV, "").strip() or str(FILE_TTL)
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0:  # nan (not a number) included
        raise ValueError(f"{FILE_TTL_ENV} must be a positive number of seconds, got {raw!r}")
    return value
