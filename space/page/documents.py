"""Documents: an upload (any format of ``transformer_hub.formats``) translated with its structure kept
(``space/rest/files.py``, the code ``POST /translate_file`` runs), given back as a file to download.

The file is checked before anything is decoded (size, format, number of sentences: ``Limits``), and the
translation is written only inside the Space's temporary folder (Gradio's upload folder, where the upload
itself already is), from which Gradio serves it.  Only a regular file inside that folder is read (its path
resolved, so a link out of it is refused; a FIFO or a device is never opened), and the upload is deleted once
read, refused or not: a visitor's file does not outlive its request.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Tuple, Union

import gradio as gr
from gradio.utils import get_upload_folder

from transformer_hub.formats import DocumentError, extensions

from ..hosting.limits import RequestError
from ..pictures.word_view import domain_advice
from ..rest import files
from ..serving.context import SpaceContext
from ..serving.languages import AUTO, LANGUAGES
from ..serving.quality import quality_option
from ..serving.service import (DOMAIN_LABELS, DOUBT_REASON, TRANSLATE_ENGINE, SpaceModels, decoding_config,
                               domain_note, engine_note, unsure_reasons)


def temporary_folder() -> Path:
    """Where uploads arrive and translations are written: Gradio's upload folder (``GRADIO_TEMP_DIR``)."""
    return Path(get_upload_folder()).resolve()


def _uploaded(value: Any) -> Path:
    """The uploaded file's path: a regular file inside the temporary folder (Gradio checks uploads too, but
    only on Blocks it marks launched; this holds however the app is served)."""
    if isinstance(value, dict):
        value = value.get("path")
    if not value or not isinstance(value, (str, os.PathLike)):
        raise RequestError("Upload a document to translate first.")
    path = Path(value).resolve()
    if temporary_folder() not in path.parents:
        raise RequestError("The file must be uploaded to this Space (its path is outside the upload folder).")
    try:
        mode = path.stat().st_mode
    except OSError:
        raise RequestError("The uploaded file is no longer on the server (an upload is deleted once translated): "
                       "upload it again.") from None
    if not stat.S_ISREG(mode):
        raise RequestError("The file must be an uploaded regular file.")
    return path


def read_upload(value: Any, max_bytes: int) -> Tuple[Path, bytes]:
    """The uploaded document's path and bytes (one of the formats' ``extensions``, at most ``max_bytes``); the upload is deleted
    once read (or refused)."""
    path = _uploaded(value)
    try:
        if path.suffix.lower() not in extensions():
            raise RequestError(f"{path.suffix or 'A file without an extension'} files cannot be translated; upload one "
                           f"of {', '.join(extensions())}.")
        size = path.stat().st_size
        if size > max_bytes:
            raise RequestError(f"The file is too large: {size:,} bytes, the limit is {max_bytes:,}. Split it into "
                           "smaller files.")
        return path, path.read_bytes()
    finally:
        path.unlink(missing_ok=True)


def translate_document(ctx: SpaceContext, file: Any, model: str, strategy: str = "beam", beam_size: int = 4,
                       length_penalty: float = 0.6, temperature: float = 1.0, top_p: float = 1.0,
                       max_length: int = 0, source_lang: str = "en", target_lang: str = "de",
                       engine: str = TRANSLATE_ENGINE, quality: Union[bool, str] = False, domain: str = AUTO,
                       progress=gr.Progress()) -> Tuple[str, str]:
    """Translate an uploaded document (any registered format, through ``files.translate_file``, the code
    ``/translate_file`` runs); returns (the translated file's path, a note).  ``quality``: the page's
    "Best quality" box (or "fast" / "best"); ``domain``: the page's Domain menu ("auto": told from the whole
    document's text)."""
    path, data = read_upload(file, ctx.limits.max_file_bytes)
    config = decoding_config(ctx, strategy, beam_size, length_penalty, temperature, top_p, max_length)
    quality = quality_option(quality)
    try:
        done = files.translate_file(ctx, data, path.name, source_lang, target_lang, model, engine, progress, config,
                                    quality, domain=domain)
    except DocumentError as exc:
        raise RequestError(str(exc)) from None
    folder = Path(tempfile.mkdtemp(prefix="translation-", dir=temporary_folder()))
    out = folder / done.name
    out.write_bytes(done.data)
    detected = f"Detected: {LANGUAGES.get(done.source, done.source)}" if source_lang == AUTO else ""
    note = [f"{done.sentences} sentence(s) translated", detected, unsure_note(ctx, done),
            " · ".join(p for p in (domain_note(done.domain, done.domain_confidence, done.domains),
                                   engine_note(done.engine, done.seconds, done.model, quality)) if p)]
    return str(out), "  \n".join(part for part in note if part)


def unsure_note(ctx: SpaceContext, done: files.Translation) -> str:
    """The Translate tab's ⚠ for a document: how many sentences the model is unsure of, the first few, how many
    look like none of the models' domains and why, the domain note, as the text's (``word_view.domain_advice``)
    ("" when it is sure of every one)."""
    if not done.unsure:
        return ""
    shown = "; ".join(f"“{s['source']}” → “{s['translation']}”" for s in done.unsure[:files.UNSURE_SHOWN])
    why = [(sum(r in s["reasons"] for s in done.unsure), r) for r in unsure_reasons(done.unsure) if r != DOUBT_REASON]
    return (f"⚠ The model is unsure of {len(done.unsure)} of {done.sentences} sentence(s): {shown}. "
            + "".join(f"{n} of them: {r}. " for n, r in why)  # sentences of none of the domains
            + domain_advice(" and ".join(DOMAIN_LABELS.get(d, d) for d in done.trained_on) or None,
                            bool(SpaceModels(ctx).domains())))
