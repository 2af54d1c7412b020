"""The rest of LibreTranslate's API, beside ``/translate``, ``/detect`` and ``/languages`` (``space/rest/routes.py``):

* ``GET /frontend/settings``: what LibreTranslate's web UI asks first (limits, keys, suggestions, file formats,
  default languages), filled from this server's real settings.
* ``POST /translate_file`` (multipart ``file``, ``source`` or ``auto``, ``target``; our ``model``, ``engine``,
  ``quality``) ->
  ``{"translatedFileUrl"}``, and ``GET /download_file/<name>``: the document translated with its structure kept
  (``space/rest/files.py``), served only from the server's own folder under the random name it gave, until it expires.
* ``POST /suggest`` (``q``, ``s``, ``source``, ``target``): 403 unless ``SPACE_SUGGESTIONS=1``; then stored with
  the time and the model that serves the direction (``python -m transformer_hub suggestions export``).
* ``GET /health``: ``{"status": "ok"}``.

Every route but the settings, health and download checks ``api_key`` and the limits first (``space/hosting/access.py``).
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, Optional

import anyio
from starlette.datastructures import UploadFile
from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse

from transformer_hub.formats import extensions

from ..hosting.access import Access, AccessDenied, client_address
from ..serving import service
from ..serving.context import SpaceContext
from ..serving.languages import DEFAULT_PAIR, LANGUAGES
from . import files
from .input import (RestError, SafeJSONResponse, error_response, read_api_key, read_body, read_domain, read_language,
                    read_params, read_quality, refusal, required, run_watched)


class AnyName(Convertor):
    """Any download name, line breaks included (``path`` stops at one): whatever is asked reaches the route,
    which answers 404 in the routes' own form for every name it never gave out."""

    regex = r"[\s\S]*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("anyname", AnyName())
FRONTEND_TIMEOUT_MS = 500  # LibreTranslate's default: how long its web UI waits after a keystroke
FILE_WORKERS = 2           # documents translated at once; more wait (their decoding shares the one decoder)
FILE_QUEUE = 8             # documents admitted at once (translating or waiting); more get 429
FORM_OVERHEAD = 1 << 16    # a multipart body's bytes beyond its file: the other fields and the boundaries
MAX_SUGGESTION_BYTES = 4000  # q and s each, as UTF-8 (a four-byte character counts four)


class LibreAPI:
    """The routes above, over the Space's context, the REST routes' settings and the access checks."""

    def __init__(self, ctx: SpaceContext, access: Access, body_timeout: float,
                 folder: Optional[files.OutputFolder] = None, max_body_bytes: int = 1 << 18) -> None:
        self.ctx, self.access, self.body_timeout, self.max_body_bytes = ctx, access, body_timeout, max_body_bytes
        self.folder = folder or files.OutputFolder()
        self._workers: Optional[anyio.CapacityLimiter] = None
        self.files_in = 0  # documents admitted (changed on the event loop only)

    def endpoints(self) -> Dict[str, Callable]:
        return {"/frontend/settings": self.settings_route, "/translate_file": self.translate_file_route,
                "/download_file/{name:anyname}": self.download_route, "/suggest": self.suggest_route,
                "/health": self.health_route}

    # ------------------------------------------------------------------ settings, health
    def frontend_settings(self) -> Dict[str, Any]:
        """LibreTranslate's ``/frontend/settings``: this server's limits, keys, suggestions and formats."""
        pairs = self.ctx.chooser.pairs()
        target = DEFAULT_PAIR[1] if not pairs or any(t == DEFAULT_PAIR[1] for _, t in pairs) else sorted(pairs)[0][1]
        access = self.access.frontend()
        if access["charLimit"] == -1:  # a text's lines are each at most max_chars: the one length always accepted
            access["charLimit"] = self.ctx.limits.max_chars
        return {**access, "frontendTimeout": FRONTEND_TIMEOUT_MS, "filesTranslation": True,
                "supportedFilesFormat": list(extensions()),
                "language": {"source": {"code": "auto", "name": "Auto Detect"},
                             "target": {"code": target, "name": LANGUAGES[target]}}}

    async def settings_route(self, request: Request) -> JSONResponse:
        return JSONResponse(self.frontend_settings())

    async def health_route(self, request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    # ------------------------------------------------------------------ suggestions
    async def suggest_route(self, request: Request) -> JSONResponse:
        try:
            if not self.access.settings.suggestions:  # LibreTranslate says so before reading anything
                raise AccessDenied(403, "Suggestions are disabled on this server.")
            params = await read_params(request, self.max_body_bytes, self.body_timeout)
            key, address = read_api_key(params), client_address(request)
            self.access.check(key, address)
            q, s, source, target, model = self._suggestion(params)
            await anyio.to_thread.run_sync(self.access.suggest, q, s, source, target, model,
                                           self.access.who(key, address))
            return JSONResponse({"success": True})
        except (RestError, AccessDenied) as exc:
            return error_response(exc.status, exc.message)

    def _suggestion(self, params: Dict[str, Any]) -> tuple:
        """(q, s, source, target, model) of a suggestion, every field checked: texts within their bytes, known
        languages, and a model this server ships (the one serving the direction when none is named)."""
        q, s, source, target = (required(params, name, text=True) for name in ("q", "s", "source", "target"))
        for name, value in (("q", q), ("s", s)):
            size = len(value.encode("utf-8"))
            if size > MAX_SUGGESTION_BYTES:
                raise RestError(400, f"Invalid request: {name} is {size:,} bytes (UTF-8), the limit is "
                                     f"{MAX_SUGGESTION_BYTES:,}")
        source, target = read_language(source), read_language(target)
        model = params.get("model")
        if model in (None, "", "auto"):
            return q, s, source, target, self.ctx.chooser.best(source, target)
        if not isinstance(model, str) or model not in self.ctx.store.specs:  # a name it lists, never a path
            shown = model[:40] if isinstance(model, str) else type(model).__name__
            raise RestError(400, f"Invalid request: model {shown!r} is not one of this server's models "
                                 f"({', '.join(self.ctx.store.names())})")
        return q, s, source, target, model

    # ------------------------------------------------------------------ files
    async def translate_file_route(self, request: Request) -> JSONResponse:
        try:
            form = await self._form(request)
            upload = form.get("file")
            if not isinstance(upload, UploadFile):
                raise RestError(400, "Invalid request: missing file parameter")
            source, target = required(form, "source", text=True), required(form, "target", text=True)
            if not upload.filename:
                raise RestError(400, "Invalid request: empty file")
            if os.path.splitext(upload.filename)[1].lower() not in extensions():
                raise RestError(400, "Invalid request: file format not supported "
                                     f"(use one of {', '.join(extensions())})")
            source, target = read_language(source, auto=True), read_language(target, auto=True)
            data = await upload.read()
            chars = self.access.settings.char_limit  # LibreTranslate's cost of a file: its bytes / the char limit
            self.access.check(_text(form.get("api_key")), client_address(request),
                              cost=max(1, len(data) // chars) if chars > 0 else 1)
            done = await self._translate(data, upload.filename, source, target, form, request)
        except (RestError, AccessDenied) as exc:
            return error_response(exc.status, exc.message)
        name = self.folder.add(done.data, done.name)
        url = str(request.base_url).rstrip("/") + "/download_file/" + name
        answer = {"translatedFileUrl": url, "model": done.model, "engine": done.engine,
                  "detectedLanguage": {"language": done.source}}
        if done.domain:  # our extension, as /translate's: the domain the document was read as
            answer["domain"] = done.domain
        mixed = service.mixed_domains_warning(done.domains)
        if mixed is not None:  # as /translate's: how many sentences were read as each domain
            answer["domains"], answer["warnings"] = done.domains, [mixed]
        unsure = files.unsure_summary(done)
        if unsure is not None:  # our extension, as /translate's word view flags a sentence: LibreTranslate's kept
            answer["unsure"] = unsure
        return SafeJSONResponse(answer)

    async def _form(self, request: Request):
        body = await read_body(request, self.ctx.limits.max_file_bytes + FORM_OVERHEAD, self.body_timeout)
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "multipart/form-data":
            raise RestError(400, "Invalid request: send the file as multipart/form-data (a field named file)")
        request._body = body  # starlette parses the form from the body already read
        try:
            return await request.form(max_files=1, max_fields=32)
        except Exception as exc:  # noqa: BLE001 - starlette's multipart errors have no common type
            raise RestError(400, f"Invalid request body: {exc}") from None

    async def _translate(self, data: bytes, filename: str, source: str, target: str, form,
                         request: Request) -> files.Translation:
        if self._workers is None:
            self._workers = anyio.CapacityLimiter(FILE_WORKERS)
        model, engine = _text(form.get("model")) or None, _text(form.get("engine")) or "auto"
        quality = read_quality(form)
        domain = read_domain(form, service.SpaceModels(self.ctx).domains())
        if self.files_in >= FILE_QUEUE:
            raise RestError(429, f"Slowdown: {self.files_in} documents are being translated; retry in a moment")
        self.files_in += 1
        try:  # the client gone: the document's worker killed at once, no next part of its sentences decoded
            return await run_watched(request, lambda cancelled: files.translate_file(
                self.ctx, data, filename, source, target, model, engine, quality=quality, cancelled=cancelled,
                domain=domain), self._workers)
        except Exception as exc:  # noqa: BLE001 - each kind worded by refusal(); a fault of the server logged there
            raise refusal(exc, "translate file", "/translate_file") from None
        finally:
            self.files_in -= 1

    async def download_route(self, request: Request) -> Any:
        found = self.folder.get(request.path_params.get("name", ""))
        if found is None:
            return error_response(404, "No such translated file: it expired or never existed; translate the file "
                                       "again")
        path, download_name = found
        return FileResponse(path, filename=download_name)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
