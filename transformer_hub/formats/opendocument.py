"""``.odt`` and ``.odp`` (OpenDocument text and presentations), read and written with odfpy.

Every paragraph and heading (``text:p``, ``text:h``: body, tables, frames, slides, notes) is one text; only its
text nodes change, so spans, links, styles, tables and frames stay as they were (``office``). A note's body and a
frame's paragraphs are paragraphs of their own.
"""
from __future__ import annotations

import xml.sax
import zipfile
from typing import List

from odf.element import Element, Text
from odf.namespaces import DRAWNS, OFFICENS, TEXTNS
from odf.opendocument import load

from .layout import Document, register_format
from .office import Piece, office_document, open_package

_PARAGRAPHS = {(TEXTNS, "p"), (TEXTNS, "h")}
_BREAKS = {(TEXTNS, "tab"), (TEXTNS, "line-break")}
_OWN = _PARAGRAPHS | {(TEXTNS, "note"), (OFFICENS, "annotation")}  # their text is not this paragraph's


def _setter(node: Text):
    def set_text(text: str) -> None:
        node.data = text
    return set_text


def _pieces(element: Element, pieces: List[Piece]) -> List[Piece]:
    for child in element.childNodes:
        if isinstance(child, Text):
            pieces.append(Piece(child.data, _setter(child)))
        elif getattr(child, "qname", None) in _BREAKS:
            pieces.append(Piece("\n"))
        elif getattr(child, "qname", None) not in _OWN and getattr(child, "qname", (None,))[0] != DRAWNS:
            _pieces(child, pieces)  # a span, a link, a bookmark ...
    return pieces


def _walk(element: Element, found: List[Element]) -> List[Element]:
    for child in element.childNodes:
        if getattr(child, "qname", None) in _PARAGRAPHS:
            found.append(child)
        if isinstance(child, Element):
            _walk(child, found)
    return found


def read(data: bytes) -> Document:
    document = open_package(data, FORMAT.title, "content.xml", load,
                            (KeyError, ValueError, zipfile.BadZipFile, xml.sax.SAXException))
    # odfpy keeps the manifest's entry for the package root ("/") as an opaque member and writes it again beside
    # its own: the written manifest would list "/" twice.
    document._extra = [member for member in document._extra if member.filename != "/"]
    paragraphs = [_pieces(p, []) for p in _walk(document.body, [])]
    return office_document(paragraphs, document.write)


FORMAT = register_format("opendocument", "OpenDocument", (".odt", ".odp"), read, order=60)
