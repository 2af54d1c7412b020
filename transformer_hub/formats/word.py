"""``.docx`` (Word), read and written with python-docx.

Every paragraph of the body, its tables (nested ones too), text boxes, headers, footers, footnotes and endnotes
is one text; only the text of its runs (``<w:t>``) changes, so runs, their styles, tables, images and fields
stay as they were (``office``).
"""
from __future__ import annotations

from typing import List

import docx
from docx.opc.exceptions import PackageNotFoundError
from docx.opc.part import XmlPart
from docx.oxml.ns import qn
from lxml import etree

from .layout import Document, register_format
from .office import Piece, office_document, open_package

_TEXT, _BREAKS = qn("w:t"), {qn("w:tab"), qn("w:br"), qn("w:cr")}
_STORIES = ("document", "header", "footer", "footnotes", "endnotes")


def _setter(element):
    def set_text(text: str) -> None:
        element.text = text
        if text != text.strip():  # Word drops a run's edge spaces unless told to keep them
            element.set("{http://www.w3.org/XML/1998/namespace}space", "preserve")
    return set_text


def _pieces(paragraph) -> List[Piece]:
    pieces = []
    for element in paragraph.iter(_TEXT, *_BREAKS):
        if next(element.iterancestors(qn("w:p")), None) is not paragraph:
            continue  # a text box's paragraph inside this one: a paragraph of its own
        if element.tag == _TEXT:
            pieces.append(Piece(element.text or "", _setter(element)))
        else:
            pieces.append(Piece("\n"))
    return pieces


def read(data: bytes) -> Document:
    document = open_package(data, FORMAT.title, "word/document.xml", docx.Document,
                            (PackageNotFoundError, KeyError, ValueError, etree.XMLSyntaxError))
    parts = [part for part in document.part.package.iter_parts() if isinstance(part, XmlPart)
             and str(part.partname).rsplit("/", 1)[-1].startswith(_STORIES)]
    paragraphs = [_pieces(p) for part in parts for p in part.element.iter(qn("w:p"))]
    return office_document(paragraphs, document.save)


FORMAT = register_format("word", "Word", (".docx",), read, order=40)
