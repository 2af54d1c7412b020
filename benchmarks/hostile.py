"""Hostile documents, built at any scale (the tests scale them just past the limits; the benchmark
``python -m benchmarks hostile`` at the sizes the issue reported), and valid documents of each format to mutate.

    hostile_cases(scale=1.0)   # {name: (suffix, bytes)}: empty elements by the million, deep nesting, a flipped
                               # CRC, an overflowing timestamp, deep HTML
    valid_documents()          # {suffix: bytes}: one small valid document per format (the fuzzer's seeds)
"""
from __future__ import annotations

import io
import zipfile
from typing import Callable, Dict, Tuple

import docx
import pptx
from odf.opendocument import OpenDocumentPresentation, OpenDocumentText
from odf.draw import Frame, Page, TextBox
from odf.style import MasterPage, PageLayout
from odf.text import P, Span

ODF_OPEN = ('<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:'
            'opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
            'office:version="1.2"><office:body><office:text>')
ODF_CLOSE = "</office:text></office:body></office:document-content>"
W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
CHAPTER = ('<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>T</title>'
           '</head><body>{}</body></html>')


def replace_member(data: bytes, name: str, content: bytes) -> bytes:
    """The ZIP package ``data`` with member ``name``'s content replaced (its compression kept)."""
    source, out = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for member in source.infolist():
            target.writestr(member, content if member.filename == name else source.read(member),
                            compress_type=zipfile.ZIP_DEFLATED if member.filename == name else member.compress_type)
    return out.getvalue()


def flip_crc(data: bytes, name: str) -> bytes:
    """``data`` with the CRC-32 that ``name``'s central directory entry records changed (the content intact)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        member = archive.getinfo(name)
    out = bytearray(data)
    # the local header's CRC sits 14 bytes into it: a reader comparing the content's checksum finds it wrong
    at = member.header_offset + 14
    out[at] ^= 0xFF
    start = 0
    while True:  # the central directory's entry for the member: its CRC 16 bytes in
        start = bytes(out).find(b"PK\x01\x02", start)
        if start < 0:
            break
        length = int.from_bytes(out[start + 28:start + 30], "little")
        if bytes(out[start + 46:start + 46 + length]).decode("utf-8", "replace") == name:
            out[start + 16] ^= 0xFF
        start += 4
    return bytes(out)


def make_docx(text: str = "A dog runs. Where is the train station?") -> bytes:
    document = docx.Document()
    document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def make_pptx(text: str = "A dog runs.") -> bytes:
    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = text
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def make_odt(text: str = "A dog runs.") -> bytes:
    document = OpenDocumentText()
    paragraph = P(text=text)
    paragraph.addElement(Span(text=" It is fast."))
    document.text.addElement(paragraph)
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def make_odp(text: str = "A dog runs.") -> bytes:
    document = OpenDocumentPresentation()
    layout = PageLayout(name="L")
    document.automaticstyles.addElement(layout)
    master = MasterPage(name="M", pagelayoutname=layout)
    document.masterstyles.addElement(master)
    page = Page(masterpagename=master)
    frame = Frame(width="10cm", height="2cm", x="1cm", y="1cm")
    box = TextBox()
    box.addElement(P(text=text))
    frame.addElement(box)
    page.addElement(frame)
    document.presentation.addElement(page)
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def make_epub(body: str = "<p>A dog runs.</p>") -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        archive.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:'
                         'names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" '
                         'media-type="application/oebps-package+xml"/></rootfiles></container>')
        archive.writestr("OEBPS/content.opf", '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
                         'version="3.0"><manifest><item id="c1" href="ch1.xhtml" media-type="application/xhtml+xml"/>'
                         '</manifest><spine><itemref idref="c1"/></spine></package>')
        archive.writestr("OEBPS/ch1.xhtml", CHAPTER.format(body))
    return out.getvalue()


SRT = "1\n00:00:01,000 --> 00:00:02,500\nA dog runs.\n\n2\n00:00:03,000 --> 00:00:04,000\nHello there.\n"


def valid_documents() -> Dict[str, bytes]:
    """One small valid document of each of the eight formats."""
    return {".txt": b"A dog runs.\nWhere is the train station?\n", ".srt": SRT.encode(),
            ".html": b"<html><body><p>A dog <b>runs</b>.</p><ul><li>One.</li></ul></body></html>",
            ".docx": make_docx(), ".pptx": make_pptx(), ".odt": make_odt(), ".odp": make_odp(), ".epub": make_epub()}


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
