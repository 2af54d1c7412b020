"""Documents translated with their structure kept: .txt, .html, .srt, .docx, .pptx, .odt, .odp and .epub.

    from transformer_hub.formats import translate_document, document_texts, FORMATS
    out = translate_document(data, ".docx", translate, lang="en")   # bytes of the translated .docx
    document_texts(data, ".srt")                                    # its texts (to detect the language first)

``translate`` is called ONCE with every sentence of the document (a list of strings) and returns their
translations in order: the caller decides how (a model's ``translate``, the Space's decoder, a test's fake).
Each format reads the file with a maintained library, collects the texts to translate (paragraphs, cells,
cues, slide texts, HTML blocks) and writes the file back changing only their text (``layout`` maps where each
run or inline tag goes). A malformed or oversized file raises ``DocumentError`` (a ``ValueError``) saying why.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional

from . import ebook, html, opendocument, plain, slides, subtitles, word
from .html import translate_html
from .layout import Document, DocumentError, Translate, Translated, translate_texts

READERS: Dict[str, Callable[[bytes], Document]] = {
    ".txt": plain.read,
    ".html": html.read,
    ".htm": html.read,
    ".srt": subtitles.read,
    ".docx": word.read,
    ".pptx": slides.read,
    ".odt": opendocument.read,
    ".odp": opendocument.read,
    ".epub": ebook.read,
}
FORMATS = tuple(READERS)
MAX_BYTES = 20 << 20  # a document as uploaded; callers set their own, lower limit


def _reader(suffix: str) -> Callable[[bytes], Document]:
    reader = READERS.get(suffix.lower())
    if reader is None:
        raise DocumentError(f"{suffix or 'A file without an extension'} is not a format that can be translated; "
                            f"use one of {', '.join(FORMATS)}.")
    return reader


def read_document(data: bytes, suffix: str, max_bytes: int = MAX_BYTES) -> Document:
    """The document in ``data`` (a file's bytes, its format named by ``suffix`` such as ".docx"), checked."""
    reader = _reader(suffix)
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
                       max_bytes: int = MAX_BYTES, max_sentences: Optional[int] = None) -> bytes:
    """The document translated: ``translate`` gets all its sentences (cut by ``lang``'s rules) in one call."""
    document = read_document(data, suffix, max_bytes)
    return document.write(translate_texts(document.texts, translate, lang, max_sentences))


__all__ = ["FORMATS", "Document", "DocumentError", "Translate", "Translated", "document_texts", "read_document",
           "translate_document", "translate_html", "translate_texts"]
