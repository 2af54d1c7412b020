"""Hostile documents, built at any scale (the tests scale them just past the limits; the benchmark
``python -m benchmarks hostile`` at the sizes first reported).

    hostile_cases(scale=1.0)   # {name: (suffix, bytes)}: empty elements by the million, deep nesting, a flipped
                               # CRC, an overflowing timestamp, deep HTML
    text_cases()               # costly text in small files: words of 60,000 characters, 12 MB of text in 35 kB

The valid documents they are made from are ``benchmarks/documents.py``'s.
"""
from __future__ import annotations

from typing import Callable, Dict, Tuple

from .documents import flip_crc, make_docx, make_epub, make_odt, make_pptx, replace_member

ODF_OPEN = ('<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:'
            'opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
            'office:version="1.2"><office:body><office:text>')
ODF_CLOSE = "</office:text></office:body></office:document-content>"
W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def _odt_content(inner: str) -> bytes:
    return (ODF_OPEN + inner + ODF_CLOSE).encode()


def hostile_cases(scale: float = 1.0) -> Dict[str, Tuple[str, bytes]]:
    """The hostile cases; ``scale`` 1.0: the counts first reported (millions of elements: minutes before limits), the
    tests' scale keeps each just past the limits (``elements``: the empty-element count at scale 1)."""
    many: Callable[[int], int] = lambda n: max(1, int(n * scale))
    return {
        "odt-empty-paragraphs": (".odt", replace_member(make_odt(), "content.xml",
                                                        _odt_content("<text:p/>" * many(4_000_000)))),
        "epub-empty-paragraphs": (".epub", make_epub("<p/>" * many(12_000_000))),
        "docx-empty-paragraphs": (".docx", replace_member(make_docx(), "word/document.xml", (
            f'<?xml version="1.0"?><w:document {W}><w:body>' + "<w:p/>" * many(5_000_000)
            + "</w:body></w:document>").encode())),
        "odt-nested-spans": (".odt", replace_member(make_odt(), "content.xml", _odt_content(
            "<text:p>" + "<text:span>" * 5000 + "Deep." + "</text:span>" * 5000 + "</text:p>"))),
        "odt-nested-sections": (".odt", replace_member(make_odt(), "content.xml", _odt_content(
            "<text:section>" * 5000 + "<text:p>Deep.</text:p>" + "</text:section>" * 5000))),
        "docx-bad-crc": (".docx", flip_crc(make_docx(), "word/document.xml")),
        "pptx-bad-crc": (".pptx", flip_crc(make_pptx(), "ppt/presentation.xml")),
        "epub-bad-crc": (".epub", flip_crc(make_epub(), "OEBPS/ch1.xhtml")),
        "srt-huge-timestamp": (".srt", b"1\n99999999999999:00:01,000 --> 99999999999999:00:02,000\nA dog runs.\n"),
        # open tags only (a parser closes them at the end), as a visitor fits 19,000 in the 100,000-byte body limit
        "html-nested-divs": (".html", ("<html><body>" + "<div>" * 19000 + "A dog runs.</body></html>").encode()),
        "html-nested-bold": (".html", ("<p>" + "<b>" * 33000 + "A dog runs.</p>").encode()),
    }


def text_cases() -> Dict[str, Tuple[str, bytes]]:
    """Small documents that are costly text: long words without spaces (what a quadratic scan of the text choked
    on: a word of 60,000 characters took 19 s) and a 35 kB .epub holding 12 MB of text."""
    run = "-" * 60_000
    return {
        "docx-long-word": (".docx", replace_member(make_docx(), "word/document.xml", (
            f'<?xml version="1.0"?><w:document {W}><w:body><w:p><w:r><w:t>{run}</w:t></w:r></w:p></w:body>'
            "</w:document>").encode())),
        "txt-nul-bytes": (".txt", b"\0" * 60_000),
        "epub-12mb-text": (".epub", make_epub(("<p>" + "A dog runs in the park. " * 200 + "</p>") * 2500)),
    }
