"""What the ZIP-packaged formats (.docx, .pptx, .odt/.odp, .epub) share: the archive checked before any library opens
it, and a paragraph's text pieces rewritten in place.

A paragraph is a sequence of pieces: the text of its runs (``<w:t>``, ``<a:t>``, ODF text nodes) and its breaks
(tabs, line breaks: each one a line break in the text sent to the translator, so a sentence never spans one).
Only the text pieces are rewritten, each with the part of the translation its run's place maps to; every element
(run properties, images, fields, bookmarks) stays where it was.
"""
from __future__ import annotations

import io
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any, Callable, List, Tuple

from .budget import Budget, out_of_memory, scan_xml
from .layout import Document, DocumentError, Translated

MAX_UNPACKED_BYTES = 64 << 20  # a document's files together, uncompressed (their sizes as the archive declares
MAX_MEMBERS = 5_000            # them: Python's zipfile never decompresses past a member's declared size)
BREAK = "\n"
XML_MEMBERS = (".xml", ".rels", ".xhtml", ".html", ".htm", ".opf", ".ncx")  # what the libraries parse as XML
_BROKEN = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, OSError, ValueError)


def check_archive(data: bytes, kind: str, required: str) -> None:
    """Refuse anything but a reasonable ZIP archive holding ``required`` (e.g. ``word/document.xml``)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
            names = {m.filename for m in members}
    except _BROKEN as exc:  # NotImplementedError: a version or compression zipfile does not read
        raise DocumentError(f"The file is not a valid {kind} document (not a ZIP archive: {exc}).") from None
    if len(members) > MAX_MEMBERS:
        raise DocumentError(f"The {kind} document holds {len(members):,} files, the limit is {MAX_MEMBERS:,}.")
    unpacked = sum(m.file_size for m in members)
    if unpacked > MAX_UNPACKED_BYTES:
        raise DocumentError(f"The {kind} document unpacks to {unpacked:,} bytes, the limit is "
                            f"{MAX_UNPACKED_BYTES:,}.")
    if required not in names:
        raise DocumentError(f"The file is not a valid {kind} document: it has no {required}.")
    _check_members(data, kind)


def _check_members(data: bytes, kind: str) -> None:
    """Every member read once before any library opens the archive: its checksum verified (a flipped byte is the
    visitor's bad file, not the server's fault) and every XML member counted against the ``Budget`` while it is
    streamed, so a package of millions of tiny elements is refused before anything builds its tree."""
    budget = Budget(f"The {kind} document")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for member in archive.infolist():
            try:
                with archive.open(member) as stream:
                    if member.filename.lower().endswith(XML_MEMBERS):
                        scan_xml(stream, budget, member.filename)
                    else:
                        while stream.read(1 << 20):
                            pass
            except DocumentError:
                raise
            except _BROKEN as exc:
                raise DocumentError(f"The file is not a valid {kind} document: its member {member.filename} "
                                    f"is damaged ({exc}).") from None


def open_package(data: bytes, kind: str, required: str, opener: Callable[[io.BytesIO], Any],
                 errors: Tuple[type, ...]) -> Any:
    """``opener`` (the format's library) on the checked archive; its ``errors`` become a ``DocumentError``."""
    check_archive(data, kind, required)
    try:
        return opener(io.BytesIO(data))
    except errors as exc:
        if out_of_memory(exc):
            raise MemoryError(str(exc)) from None
        raise DocumentError(f"The file is not a readable {kind} document: {exc}") from None


@dataclass
class Piece:
    """A run's text (``set`` writes its new text) or a break (``set`` is None)."""

    text: str
    set: Callable[[str], None] = None  # type: ignore[assignment]


def paragraph_text(pieces: List[Piece]) -> str:
    return "".join(BREAK if piece.set is None else piece.text for piece in pieces)


def rewrite(pieces: List[Piece], done: Translated) -> None:
    """Give each text piece its part of ``done.target``; a break keeps its place (text mapped onto one, which the
    layout never does, would go to the text piece before it)."""
    bounds = [0]
    for piece in pieces:
        bounds.append(bounds[-1] + (len(BREAK) if piece.set is None else len(piece.text)))
    parts = done.pieces(bounds)
    last = None
    for i, piece in enumerate(pieces):
        if piece.set is not None:
            last = i
            continue
        extra = parts[i].replace(BREAK, "")
        if extra and last is not None:
            parts[last] += extra
    for piece, part in zip(pieces, parts):
        if piece.set is not None:
            piece.set(part)


def office_document(paragraphs: List[List[Piece]], save: Callable[[io.BytesIO], None]) -> Document:
    """The paragraphs with some text, as a ``Document`` whose ``write`` rewrites them and ``save``s the file."""
    paragraphs = [pieces for pieces in paragraphs if any(piece.text.strip() for piece in pieces)]

    def write(done: List[Translated]) -> bytes:
        for pieces, translated in zip(paragraphs, done):
            rewrite(pieces, translated)
        out = io.BytesIO()
        save(out)
        return out.getvalue()

    return Document([paragraph_text(pieces) for pieces in paragraphs], write)
