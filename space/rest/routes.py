"""LibreTranslate's REST API on the Space's server: ``POST /translate``, ``POST /detect``, ``GET /languages``.

Programs that speak LibreTranslate (``libretranslatepy``, browser extensions, subtitle tools) use the Space's
models without Gradio's queue protocol. The routes share everything with the page: the model store, the decoder
(one ``DecodingPool`` worker behind the micro-batcher, whose bounded first-come-first-served queue the page's
events use too), the limits and the per-direction default model. Parameters are read as LibreTranslate reads them
(space/rest/input.py: a JSON body, a form body or the query string, the body within a deadline and a size), and
a request takes one of ``SPACE_REST_QUEUE`` slots only once its body is in. Errors are LibreTranslate's:
``{"error": "..."}`` with 400 for a bad request, 408 for a body too slow, 413 for one too large, 429 when busy,
503 when a model cannot be loaded, 500 for a fault of the server; never a stack trace. The texts go through the
library's translation pipeline (``transformer_hub.text.pipeline``: each text detected, cut into sentences, its
direction's model chosen, all sentences of one model decoded as one batch, put back in the text's layout); the
routes only read the request and word the answer. A list answers item by item (with ``source=auto`` an item
already in the target language, or too short to detect, comes back unchanged; an error names its item,
``q[3]: ...``). Our extensions: the request fields ``model`` (a model name) and ``engine``
(``auto``, the default, ``pytorch`` or ``ctranslate2``), echoed in every translation's response, and ``glossary``
(TSV text, ``source<TAB>target`` per line, or a JSON object of source -> target terms): each term found in a
sentence must appear in its translation (constrained beam search, PyTorch: ``auto`` resolves to it), and the
answer's ``glossary`` lists per text the entries that applied.
"""
from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse

from transformer_hub.export.engine import CHOICES as ENGINE_CHOICES
from transformer_hub.text.glossary import Glossary
from transformer_hub.decoding import DecodingConfig, TranslationResult
from transformer_hub.text import language_name
from transformer_hub.text.pipeline import TextError, detect_sources, translate_texts

from transformer_hub.formats import Document

from ..hosting.access import Access, AccessDenied, client_address
from ..hosting.limits import CleanText, RequestError, clean_text
from ..serving import service
from ..serving.choice import AUTO
from ..serving.context import SpaceContext
from ..serving.glossary import NO_GLOSSARY_ENGINE, NO_GLOSSARY_ENGINE_MESSAGE
from ..serving.languages import LANGUAGES
from ..serving.service import SpaceModels
from . import html
from .input import (RestError, SafeJSONResponse, error_response, read_api_key, read_domain, read_language,
                    read_params, read_quality, refusal, required, run_watched)

logger = logging.getLogger(__name__)
PATHS = ("/translate", "/detect", "/languages")
CORS_ENV = "SPACE_CORS_ORIGINS"      # comma-separated origins, or "*"; unset: no CORS headers (the default)
BODY_ENV = "SPACE_MAX_BODY_BYTES"
QUEUE_ENV = "SPACE_REST_QUEUE"
BODY_TIMEOUT_ENV = "SPACE_BODY_TIMEOUT"
BEAM_SIZE, LENGTH_PENALTY = 4, 0.6   # the Space's defaults (the Translate tab's)


@dataclass(frozen=True)
class RestSettings:
    max_body_bytes: int = 1 << 18     # the largest text the limits allow (16 lines of 1,000 characters), form-encoded
    queue: int = 64                   # REST requests admitted at once (decoding or waiting); more get 429
    cors_origins: Tuple[str, ...] = ("*",)  # LibreTranslate's: the routes carry no credentials
    body_timeout: float = 10.0        # seconds a request body may take to arrive (a slower one gets 408)

    @classmethod
    def from_env(cls, queue: int = 64) -> "RestSettings":
        origins = tuple(o.strip() for o in os.environ.get(CORS_ENV, "*").split(",") if o.strip())
        return cls(env_number(BODY_ENV, cls.max_body_bytes), env_number(QUEUE_ENV, queue), origins,
                   env_number(BODY_TIMEOUT_ENV, cls.body_timeout))


def env_number(name: str, default):
    """The number in environment variable ``name`` (of ``default``'s type, at least 1), else ``default``."""
    raw = os.environ.get(name, "")
    try:
        return max(1, type(default)(raw)) if raw else default
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None


def _alternatives(value: Any, most: int) -> int:
    if value in (None, ""):
        return 0
    try:
        number = int(value) if not isinstance(value, (bool, float)) else None
    except (TypeError, ValueError):
        number = None
    if number is None:
        raise RestError(400, "Invalid request: alternatives parameter is not a number")
    if not 0 <= number <= most:
        raise RestError(400, f"Invalid request: alternatives must be between 0 and {most}")
    return number


def _glossary(value: Any, engine: str) -> Optional[Glossary]:
    """The ``glossary`` field: TSV text or a JSON object (also as text, as a form field carries it), or None."""
    if value is None or value == "" or value == {}:
        return None
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise RestError(400, f"Invalid request: glossary is not valid JSON ({exc})") from exc
    if not isinstance(value, (str, dict)):
        raise RestError(400, "Invalid request: glossary must be TSV text (source<TAB>target per line) or a JSON "
                             f"object of source -> target terms, got {type(value).__name__}")
    if engine == NO_GLOSSARY_ENGINE:
        raise RestError(400, f"Invalid request: {NO_GLOSSARY_ENGINE_MESSAGE}")
    try:
        return Glossary.parse(value) if isinstance(value, str) else Glossary.from_dict(value)
    except ValueError as exc:  # the parser names the line or entry at fault
        raise RestError(400, f"Invalid request: {exc}") from exc


@dataclass
class Job:
    """One ``/translate`` request, checked: its texts (cleaned, one sentence per line) and options."""

    texts: List[Optional[str]]        # None for a blank item of a list
    batch: bool
    source: str                       # a code, or "auto": the pipeline detects each text's
    target: str
    alternatives: int
    model: Optional[str]
    engine: str
    where: Callable[[int], str]       # how an error names item i ("q[3]: " in a list, "" for one text)
    documents: Optional[List[Optional[Document]]] = None  # format=html: each text's markup (space/rest/html.py)
    glossary: Optional[Glossary] = None
    cancelled: Optional[Callable[[], bool]] = None  # true once the client has gone: its decoding stops there


class RestAPI:
    """The routes, over one Space context (``routes()`` for a Starlette/FastAPI app)."""

    def __init__(self, ctx: SpaceContext, settings: Optional[RestSettings] = None,
                 access: Optional[Access] = None) -> None:
        self.ctx, self.settings = ctx, settings or RestSettings.from_env()
        self.access = access or Access()  # API keys and per-client limits (all off unless configured)
        self.active = 0  # REST requests admitted (changed on the event loop only)
        self._limiter: Optional[anyio.CapacityLimiter] = None

    def endpoints(self) -> Dict[str, Callable]:
        """The route handlers by path (their methods and description: space/rest/schema.py)."""
        return {"/translate": self.translate_route, "/detect": self.detect_route, "/languages": self.languages_route}

    # ------------------------------------------------------------------ routes
    async def translate_route(self, request: Request) -> JSONResponse:
        return await self._answer(request, self.translate)

    async def detect_route(self, request: Request) -> JSONResponse:
        return await self._answer(request, self.detect)

    async def languages_route(self, request: Request) -> JSONResponse:
        return JSONResponse(self.languages())

    async def _answer(self, request: Request, work) -> JSONResponse:
        """Read the request (within the body deadline), admit it (429 when ``queue`` are in already), run
        ``work(params, cancelled)`` in a thread (``cancelled()``: the client has gone), answer.  A slot is taken only
        once the body is in: a slow client holds none."""
        try:
            params = await read_params(request, self.settings.max_body_bytes, self.settings.body_timeout)
            q = params.get("q")
            texts = [t for t in (q if isinstance(q, list) else [q]) if isinstance(t, str)]
            key = read_api_key(params)
            self.access.check(key, client_address(request), texts, cost=len(q) if isinstance(q, list) else 1)
        except (RestError, AccessDenied) as exc:
            logger.info("REST %s: %d %s", request.url.path, exc.status, exc.message)
            return error_response(exc.status, exc.message)
        if self.active >= self.settings.queue:
            return error_response(429, f"Slowdown: the server is busy ({self.active} requests in progress); "
                                       "retry in a moment")
        self.active += 1
        try:
            if self._limiter is None:  # a thread for every admitted request: none waits for a thread
                self._limiter = anyio.CapacityLimiter(self.settings.queue)
            self._limiter.total_tokens = self.settings.queue
            start = time.perf_counter()  # the client gone: no next part of its sentences is decoded
            answer = await run_watched(request, lambda cancelled: work(params, cancelled), self._limiter)
            # the time in the handler (waiting for the decoder included), as the page's "time taken" counts it
            timing = f"handler;dur={1000 * (time.perf_counter() - start):.1f}"
            return SafeJSONResponse(answer, headers={"Server-Timing": timing})
        except Exception as exc:  # noqa: BLE001 - each kind worded by refusal(); a fault of the server logged there
            refused = refusal(exc, "translate text", request.url.path)
            if isinstance(exc, RestError):
                logger.info("REST %s: %d %s", request.url.path, exc.status, exc.message)
            return error_response(refused.status, refused.message)
        finally:
            self.active -= 1

    # ------------------------------------------------------------------ the work (in a thread)
    def languages(self) -> List[Dict[str, Any]]:
        """LibreTranslate's ``[{"code", "name", "targets"}]`` for every language some model translates from."""
        pairs = self.ctx.chooser.pairs()
        return [{"code": code, "name": name, "targets": [t for t in LANGUAGES if (code, t) in pairs]}
                for code, name in LANGUAGES.items() if any(s == code for s, _ in pairs)]

    def detect(self, params: Dict[str, Any], cancelled: Optional[Callable[[], bool]] = None) -> List[Dict[str, Any]]:
        q = required(params, "q")
        if not isinstance(q, str):
            raise RestError(400, "Invalid request: q must be a text")
        try:
            (code,), (confidence,), _ = detect_sources(self.models(), [q], AUTO, None)
        except TextError as exc:
            raise RestError(400, self.refusal(exc, lambda i: "", [0])) from exc
        return [html.libre_detection(code, confidence)]

    def models(self, job: Optional[Job] = None) -> SpaceModels:
        """The Space's models for the pipeline: the job's model, engine and ``cancelled``; detection among the
        languages some model translates from."""
        served = list(dict.fromkeys(s for s, _ in self.ctx.chooser.pairs()))
        if not served:
            raise RestError(400, "No model is available to detect languages for")
        if job is None:
            return SpaceModels(self.ctx, languages=served)
        return SpaceModels(self.ctx, job.model, job.engine, languages=served, cancelled=job.cancelled)

    def refusal(self, exc: TextError, where: Callable[[int], str], items: List[int]) -> str:
        """The answer to the pipeline's refusal of one text (``items`` maps its index to the item of ``q``)."""
        at = where(items[exc.index])
        if exc.kind == "unserved":
            served = ", ".join(self.models().languages())
            return (f"{at}{exc.code} is not supported (the text looks like {language_name(exc.code)}); "
                    f"this server translates from {served}")
        return f"{at}{exc}" if "not available as a target" in str(exc) else f"Invalid request: {at}{exc}"

    def check(self, params: Dict[str, Any]) -> Job:
        """``params`` as a job, or ``RestError`` (400) naming what is wrong (and in a list, which item: ``q[3]``),
        in LibreTranslate's order."""
        q = required(params, "q")
        source, target = required(params, "source"), required(params, "target")
        batch = isinstance(q, list)
        raw = q if batch else [q]
        where = (lambda i: f"q[{i}]: ") if batch else (lambda i: "")
        for i, text in enumerate(raw):
            if not isinstance(text, str):
                raise RestError(400, f"Invalid request: {where(i)}q must be a text or a list of texts, "
                                     f"got {type(text).__name__}")
        if batch and len(raw) > self.ctx.limits.max_lines:
            raise RestError(400, f"Invalid request: request ({len(raw)}) exceeds text limit "
                                 f"({self.ctx.limits.max_lines})")
        text_format = params.get("format") or "text"
        if text_format not in ("text", "html"):
            raise RestError(400, f"{text_format!s} format is not supported")
        alternatives = _alternatives(params.get("alternatives"), self.ctx.limits.max_beam - 1)
        target = read_language(target)
        documents = None
        if text_format == "html":  # its visible text is what is detected, counted and translated
            documents = html.read_markups(raw, batch, self.ctx.limits, where)
            cleaned = [None if d is None else "\n".join(d.texts) for d in documents]
        else:
            cleaned = ["\n".join(self._clean(t, where(i)).lines) if t.strip() or not batch else None
                       for i, t in enumerate(raw)]
        if source != AUTO:
            source = read_language(source)
        model, engine = params.get("model"), params.get("engine")  # [] or {} is a mistake, not "not given"
        model = None if model in (None, "", AUTO) else model  # "auto" as on the page: the best model for the direction
        engine = service.TRANSLATE_ENGINE if engine in (None, "") else engine
        if model is not None and not isinstance(model, str):
            raise RestError(400, "Invalid request: model must be a model name")
        if not isinstance(engine, str) or engine not in ENGINE_CHOICES:
            raise RestError(400, f"Invalid request: engine must be one of {', '.join(ENGINE_CHOICES)}")
        glossary = _glossary(params.get("glossary"), engine)
        return Job(cleaned, batch, source, target, alternatives, model, engine, where, documents, glossary)

    def _clean(self, text: str, where: str = "") -> CleanText:
        try:
            return clean_text(text, self.ctx.limits, what="a text to translate")
        except RequestError as exc:
            raise RestError(400, f"Invalid request: {where}{exc.message}") from exc

    def translate(self, params: Dict[str, Any], cancelled: Optional[Callable[[], bool]] = None) -> Dict[str, Any]:
        """The text pipeline over the Space's models: each text's model chosen for its direction (``model`` and
        ``engine`` are per text: lists when ``q`` is a list), its k-th alternative the k-th best of every sentence;
        ``cancelled()`` (the client has gone) stops its decoding between parts."""
        job = self.check(params)
        job.cancelled = cancelled
        quality = read_quality(params, html=job.documents is not None)
        domain = read_domain(params, self.models(job).domains())
        if job.documents is not None:
            return html.translate(self, job, domain)
        picks = [i for i, text in enumerate(job.texts) if text is not None]
        results = self.run(job, lambda models: translate_texts(
            models, [job.texts[i] for i in picks], self.config(job), src_lang=job.source, tgt_lang=job.target,
            keep_target_language=True, glossary=job.glossary, check_size=self.check_size,
            quality=quality, domain=domain), picks)
        found: List[Optional[TranslationResult]] = [None] * len(job.texts)
        for i, result in zip(picks, results):
            found[i] = result
        alternatives = [[r.hypotheses[min(k, len(r.hypotheses) - 1)].text for k in range(job.alternatives + 1)]
                        if r is not None else [""] * (job.alternatives + 1) for r in found]
        answer: Dict[str, Any] = {"translatedText": [a[0] for a in alternatives]}
        if job.source == AUTO:
            answer["detectedLanguage"] = [html.libre_detection(*((r.src_lang, r.src_lang_confidence)
                                                                        if r is not None else (None, None)))
                                          for r in found]
        if job.alternatives:
            answer["alternatives"] = [a[1:] for a in alternatives]
        if any(r is not None and r.model for r in found):
            answer["model"] = [r.model if r is not None else None for r in found]
            answer["engine"] = [r.engine if r is not None else None for r in found]
        # our extension, as /translate_file's: whether the model is unsure of any sentence of each text, and why
        unsure = [service.unsure_sentences(self.ctx, r) if r is not None else [] for r in found]
        answer["unsure"] = [bool(u) for u in unsure]
        if any(unsure):
            answer["unsure_reasons"] = [service.unsure_reasons(u) for u in unsure]
        if any(r is not None and r.domain for r in found):  # models trained with domains: the one each text got
            answer["domain"] = [r.domain if r is not None else None for r in found]
        if job.glossary is not None:
            answer["glossary"] = [[e.to_dict() for e in r.glossary] if r is not None else [] for r in found]
        answer.update(service.answer_warnings([r.warnings if r is not None else [] for r in found],
                                              [r.domain_counts if r is not None else {} for r in found]))
        return answer if job.batch else {key: value[0] for key, value in answer.items()}

    def config(self, job: Job) -> DecodingConfig:
        """The Space's beam search, wide enough for the alternatives asked for."""
        return service.decoding_config(self.ctx, "beam", max(BEAM_SIZE, job.alternatives + 1), LENGTH_PENALTY,
                                       n_best=job.alternatives + 1)

    def check_size(self, count: int) -> None:
        """The pipeline's count of the sentences to decode, against the limit (before any is decoded)."""
        if count > self.ctx.limits.max_sentences:
            raise RestError(400, f"Invalid request: request ({count} sentences) exceeds text limit "
                                 f"({self.ctx.limits.max_sentences} sentences)")

    def run(self, job: Job, work: Callable[[SpaceModels], Any], items: List[int]) -> Any:
        """``work(models)`` (a pipeline call over the job's texts ``items``), its refusals as 400s."""
        try:
            return work(self.models(job))
        except TextError as exc:  # a text in a language no model reads, or a direction no model serves
            raise RestError(400, self.refusal(exc, job.where, items)) from exc
