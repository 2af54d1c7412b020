"""``.pptx`` (PowerPoint), read and written with python-pptx.

Every paragraph of every slide (text boxes, placeholders, grouped shapes, table cells) and of its speaker notes
is one text; only the text of its runs (``<a:t>``) changes, so shapes, runs and their formatting stay as they
were (``office``). Fields (slide numbers, dates) are left to PowerPoint.
"""
from __future__ import annotations

from typing import List

import pptx
from lxml import etree
from pptx.exc import PackageNotFoundError
from pptx.oxml.ns import qn

from .layout import Document, register_format
from .office import Piece, office_document, open_package

_TEXT, _BREAK, _FIELD = qn("a:t"), qn("a:br"), qn("a:fld")


def _setter(element):
    def set_text(text: str) -> None:
        element.text = text
    return set_text


def _pieces(paragraph) -> List[Piece]:
    pieces = []
    for element in paragraph.iter(_TEXT, _BREAK):
        if element.tag == _BREAK:
            pieces.append(Piece("\n"))
        elif element.getparent().tag != _FIELD:
            pieces.append(Piece(element.text or "", _setter(element)))
    return pieces


def read(data: bytes) -> Document:
    presentation = open_package(data, FORMAT.title, "ppt/presentation.xml", pptx.Presentation,
                                (PackageNotFoundError, KeyError, ValueError, etree.XMLSyntaxError))
    trees = []
    for slide in presentation.slides:
        trees.append(slide.element)
        if slide.has_notes_slide:
            trees.append(slide.notes_slide.element)
    paragraphs = [_pieces(p) for tree in trees for p in tree.iter(qn("a:p"))]
    return office_document(paragraphs, presentation.save)


FORMAT = register_format("slides", "PowerPoint", (".pptx",), read, order=50)
