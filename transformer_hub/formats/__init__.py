"""Documents translated with their structure kept: .txt, .html, .srt, .docx, .pptx, .odt, .odp, .epub, and the
localization files .po/.pot, XLIFF (.xlf, .xliff) and JSON messages (.json, i18next style).

    from transformer_hub.formats import translate_document, document_texts, extensions
    out = translate_document(data, ".docx", translate, lang="en")   # bytes of the translated .docx
    document_texts(data, ".srt")                                    # its texts (to detect the language first)
    extensions()                                                    # (".txt", ".html", ".htm", ".srt", ...)

``translate`` is called ONCE with every sentence of the document (a list of strings) and returns their
translations in order: the caller decides how (a model's ``translate``, the Space's decoder, a test's fake).
Each format reads the file with a maintained library, collects the texts to translate (paragraphs, cells,
cues, slide texts, HTML blocks) and writes the file back changing only their text (``layout`` maps where each
run or inline tag goes). A malformed or oversized file raises ``DocumentError`` (a ``ValueError``) saying why.
Each format registers itself in ``DOCUMENT_FORMATS`` (``register_format``: its name, label, extensions, reader);
what the library and the Space accept is read from there.
"""
from __future__ import annotations

import functools
from typing import Any, List, Optional, Tuple

from . import (ebook, gettext, html, messages, opendocument, plain, slides, subtitles,  # noqa: F401 - importing
               word, xliff)  # registers them
from .html import translate_html
from .layout import (DOCUMENT_FORMATS, Cut, Document, DocumentError, DocumentFormat, Translate, Translated,
                     cut_document, register_format, translate_document_texts)

MAX_BYTES = 20 << 20  # a document as uploaded; callers set their own, lower limit


def document_formats() -> List[DocumentFormat]:
    """Every registered format, in the order the Space lists them."""
    return sorted((DOCUMENT_FORMATS.get(name) for name in DOCUMENT_FORMATS.names()), key=lambda f: f.order)


def extensions() -> Tuple[str, ...]:
    """Every extension a document may have (".txt", ".html", ".htm", ...), in the formats' order."""
    return tuple(extension for found in document_formats() for extension in found.extensions)


def format_of(suffix: str) -> DocumentFormat:
    """The format of a file ending in ``suffix`` (".DOCX" as ".docx"), else a ``DocumentError`` naming the others."""
    found = next((f for f in document_formats() if suffix.lower() in f.extensions), None)
    if found is None:
        raise DocumentError(f"{suffix or 'A file without an extension'} is not a format that can be translated; "
                            f"use one of {', '.join(extensions())}.")
    return found


def read_document(data: bytes, suffix: str, max_bytes: int = MAX_BYTES, **options: Any) -> Document:
    """The document in ``data`` (a file's bytes, its format named by ``suffix`` such as ".docx"), checked;
    ``options`` (``tgt_lang``, ``overwrite``) reach the formats whose reader takes them (a catalog's plural forms
    are the target language's)."""
    found = format_of(suffix)
    reader = functools.partial(found.read, **{k: v for k, v in options.items() if k in found.options})
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"expected the file's bytes, got {type(data).__name__}")
    if len(data) > max_bytes:
        raise DocumentError(f"The file is too large: {len(data):,} bytes, the limit is {max_bytes:,}.")
    if not data:
        raise DocumentError("The file is empty: there is nothing to translate.")
    return reader(bytes(data))


def document_texts(data: bytes, suffix: str, max_bytes: int = MAX_BYTES) -> List[str]:
    """The texts of a document that would be translated, in order (to detect its language)."""
    return read_document(data, suffix, max_bytes).texts


def translate_document(data: bytes, suffix: str, translate: Translate, lang: Optional[str] = None,
                       max_bytes: int = MAX_BYTES, max_sentences: Optional[int] = None, **options: Any) -> bytes:
    """The document translated: ``translate`` gets all its sentences (cut by ``lang``'s rules) in one call;
    ``options`` as for ``read_document``."""
    document = read_document(data, suffix, max_bytes, **options)
    return document.write(translate_document_texts(document.texts, translate, lang, max_sentences))


__all__ = ["DOCUMENT_FORMATS", "Cut", "Document", "DocumentError", "DocumentFormat", "Translate", "Translated",
           "cut_document", "document_formats", "document_texts", "extensions", "format_of", "read_document",
           "register_format", "translate_document", "translate_document_texts", "translate_html"]
