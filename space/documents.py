"""Documents: a .txt upload translated sentence by sentence, its layout kept, given back as a file to download.

The file is checked before anything is decoded (size, UTF-8, number of sentences: ``Limits``), and the
translation is written only inside the Space's temporary folder (Gradio's upload folder, where the upload
itself already is), from which Gradio serves it.  Only a regular file inside that folder is read (its path
resolved, so a link out of it is refused; a FIFO or a device is never opened), and the upload is deleted once
read, refused or not: a visitor's file does not outlive its request.
"""
from __future__ import annotations

import os
import re
import stat
import tempfile
import unicodedata
from pathlib import Path
from typing import Any, Tuple

import gradio as gr
from gradio.utils import get_upload_folder

from .context import SpaceContext
from .limits import CleanText, _is_control
from .service import ENGINE_CHOICES, TRANSLATE_ENGINE, decode_text, decoding_config, engine_note, pick_engine
from . import view


def temporary_folder() -> Path:
    """Where uploads arrive and translations are written: Gradio's upload folder (``GRADIO_TEMP_DIR``)."""
    return Path(get_upload_folder()).resolve()


def _uploaded(value: Any) -> Path:
    """The uploaded file's path: a regular file inside the temporary folder (Gradio checks uploads too, but
    only on Blocks it marks launched; this holds however the app is served)."""
    if isinstance(value, dict):
        value = value.get("path")
    if not value or not isinstance(value, (str, os.PathLike)):
        raise gr.Error("Upload a .txt file to translate first.")
    path = Path(value).resolve()
    if temporary_folder() not in path.parents:
        raise gr.Error("The file must be uploaded to this Space (its path is outside the upload folder).")
    try:
        mode = path.stat().st_mode
    except OSError:
        raise gr.Error("The uploaded file is no longer on the server (an upload is deleted once translated): "
                       "upload it again.") from None
    if not stat.S_ISREG(mode):
        raise gr.Error("The file must be an uploaded regular file.")
    return path


def read_document(value: Any, max_bytes: int) -> Tuple[Path, str]:
    """The uploaded .txt's path and text: at most ``max_bytes``, UTF-8, newlines normalised, controls dropped.
    The upload is deleted once read (or refused)."""
    path = _uploaded(value)
    try:
        raw = _read(path, max_bytes)
    finally:
        path.unlink(missing_ok=True)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise gr.Error(f"The file is not UTF-8 text (byte 0x{raw[exc.start]:02x} at position {exc.start}): save "
                       "it as UTF-8 and upload it again.") from None
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = "".join(ch for ch in text if not _is_control(ch))
    if not text.strip():
        raise gr.Error("The file is empty: there is nothing to translate.")
    return path, text


def _read(path: Path, max_bytes: int) -> bytes:
    if path.suffix.lower() != ".txt":
        raise gr.Error(f"Only .txt files can be translated, got {path.suffix or 'a file without extension'}.")
    size = path.stat().st_size
    if size > max_bytes:
        raise gr.Error(f"The file is too large: {size:,} bytes, the limit is {max_bytes:,}. Split it into "
                       "smaller files.")
    return path.read_bytes()


def translate_document(ctx: SpaceContext, file: Any, model: str, strategy: str = "beam", beam_size: int = 4,
                       length_penalty: float = 0.6, temperature: float = 1.0, top_p: float = 1.0,
                       max_length: int = 0, source_lang: str = "en", target_lang: str = "de",
                       engine: str = TRANSLATE_ENGINE, progress=gr.Progress()) -> Tuple[str, str]:
    """Translate an uploaded .txt; returns (the translated file's path, a note).  The engine "auto" (the
    tab's default) is CTranslate2 when it can run the call: a document needs no word view."""
    path, text = read_document(file, ctx.limits.max_file_bytes)
    engine = pick_engine(engine, ENGINE_CHOICES)
    config = decoding_config(ctx, strategy, beam_size, length_penalty, temperature, top_p, max_length)
    lines = [re.sub(r"[^\S\n]+", " ", line).strip() for line in text.split("\n")]
    data, seconds = decode_text(ctx, CleanText(lines, 0), model, config, source_lang, target_lang, engine,
                                progress=progress)
    folder = Path(tempfile.mkdtemp(prefix="translation-", dir=temporary_folder()))
    out = folder / f"{path.stem[:80]}.{data['target_lang']}.txt"
    out.write_text(data["translation"], encoding="utf-8")  # the lines joined again: the file's own line ends
    note = [f"{len(data['sentences'])} sentence(s) translated", view.note(data),
            engine_note(data["engine"], seconds, data["model"])]
    return str(out), "  \n".join(part for part in note if part)
