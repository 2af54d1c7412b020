"""Documents of every format built with their own libraries, for the benchmarks and the tests alike: small valid
ones (``valid_documents()``: one per format, the hostile cases' and the fuzzer's seeds), formatted ones (headings,
runs and their styles, tables, slides, notes, line breaks: what a translated document must keep), and the ZIP
surgery the hostile cases are made with."""
from __future__ import annotations

import io
import zipfile
from typing import Dict

import docx
import pptx
from odf.draw import Frame, Page, TextBox
from odf.opendocument import OpenDocumentPresentation, OpenDocumentText
from odf.style import MasterPage, PageLayout, Style, TextProperties
from odf.table import Table, TableCell, TableRow
from odf.text import H, LineBreak, P, Span

CHAPTER = ('<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>T</title>'
           '</head><body>{}</body></html>')
SUBTITLES = ("1\r\n00:00:01,000 --> 00:00:02,500\r\nA dog runs\r\nacross the park.\r\n\r\n"
             "2\r\n00:00:03,250 --> 00:00:04,000 X1:10\r\nHello.\r\n\r\n"
             "3\r\n01:02:03,004 --> 01:02:05,000\r\nTwo sentences. In one cue.\r\n")


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


def odf_bytes(document) -> bytes:
    """An odfpy document as the bytes of its file."""
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def make_odt(text: str = "A dog runs.") -> bytes:
    document = OpenDocumentText()
    paragraph = P(text=text)
    paragraph.addElement(Span(text=" It is fast."))
    document.text.addElement(paragraph)
    return odf_bytes(document)


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
    return odf_bytes(document)


def make_epub(body: str = "<p>A dog runs.</p>") -> bytes:
    return epub_package(CHAPTER.format(body))


def epub_package(chapter: str, extra: Dict[str, str] = None) -> bytes:
    """A minimal EPUB 3: its mimetype first and stored, a container, a package file, one chapter (and ``extra``
    members)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")  # ZipInfo's default: stored
        archive.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:'
                         'names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" '
                         'media-type="application/oebps-package+xml"/></rootfiles></container>')
        archive.writestr("OEBPS/content.opf", '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
                         'version="3.0"><manifest><item id="c1" href="ch1.xhtml" media-type="application/xhtml+xml"/>'
                         '</manifest><spine><itemref idref="c1"/></spine></package>')
        archive.writestr("OEBPS/ch1.xhtml", chapter)
        for name, content in (extra or {}).items():
            archive.writestr(name, content)
    return out.getvalue()


SRT = "1\n00:00:01,000 --> 00:00:02,500\nA dog runs.\n\n2\n00:00:03,000 --> 00:00:04,000\nHello there.\n"


PO = (b'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n#, c-format\nmsgid "_Open %s"\nmsgstr ""\n\n'
      b'msgid "%d file"\nmsgid_plural "%d files"\nmsgstr[0] ""\nmsgstr[1] ""\n')
MESSAGES = (b'{\n  "menu": {\n    "open": "Open {{name}}",\n    "files_one": "{{count}} file",\n    '
            b'"files_other": "{{count}} files"\n  },\n  "help.about": "About <b>$t(app.name)</b>"\n}\n')
XLIFF = (b'<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file source-language="en" '
         b'datatype="plaintext" original="a"><body><trans-unit id="1"><source>A <g id="1">dog</g> runs.</source>'
         b'</trans-unit></body></file></xliff>')


def valid_documents() -> Dict[str, bytes]:
    """One small valid document of each of the eleven formats."""
    return {".txt": b"A dog runs.\nWhere is the train station?\n", ".srt": SRT.encode(),
            ".html": b"<html><body><p>A dog <b>runs</b>.</p><ul><li>One.</li></ul></body></html>",
            ".docx": make_docx(), ".pptx": make_pptx(), ".odt": make_odt(), ".odp": make_odp(), ".epub": make_epub(),
            ".po": PO, ".xlf": XLIFF, ".json": MESSAGES}


# ---------------------------------------------------------------- formatted documents
def formatted_docx() -> bytes:
    document = docx.Document()
    document.add_heading("A title here.", level=1)
    paragraph = document.add_paragraph("Plain start, ")
    paragraph.add_run("bold part").bold = True
    paragraph.add_run(" and an ")
    paragraph.add_run("italic end.").italic = True
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row.cells):
            cell.text = f"Cell {r} {c}."
    inner = table.cell(1, 1).add_table(rows=1, cols=1)
    inner.cell(0, 0).text = "Nested cell."
    document.add_paragraph("Tab\tinside. Then a second sentence.")
    document.sections[0].header.paragraphs[0].text = "Header text."
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def formatted_pptx() -> bytes:
    presentation = pptx.Presentation()
    for number in range(2):
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text = f"Slide {number} title."
        frame = slide.placeholders[1].text_frame
        frame.text = "First point."
        paragraph = frame.add_paragraph()
        paragraph.add_run().text = "Mixed "
        run = paragraph.add_run()
        run.text = "bold words."
        run.font.bold = True
        slide.notes_slide.notes_text_frame.text = "Speaker notes."
    table = presentation.slides[1].shapes.add_table(1, 2, 0, 0, 100, 100).table
    table.cell(0, 0).text, table.cell(0, 1).text = "Left cell.", "Right cell."
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def formatted_odt() -> bytes:
    document = OpenDocumentText()
    bold = Style(name="Bold", family="text")
    bold.addElement(TextProperties(fontweight="bold"))
    document.automaticstyles.addElement(bold)
    document.text.addElement(H(outlinelevel=1, text="A heading."))
    paragraph = P(text="Start with ")
    paragraph.addElement(Span(stylename=bold, text="bold words"))
    paragraph.addText(" and more.")
    paragraph.addElement(LineBreak())
    paragraph.addText("After the break.")
    document.text.addElement(paragraph)
    table = Table(name="T")
    row = TableRow()
    for text in ("Left cell.", "Right cell."):
        cell = TableCell()
        cell.addElement(P(text=text))
        row.addElement(cell)
    table.addElement(row)
    document.text.addElement(table)
    return odf_bytes(document)


FORMATTED_CHAPTER = ('<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head>'
                     '<title>Chapter one.</title></head><body><h1>Chapter one.</h1><p>A dog <em>runs</em> in the park.'
                     '<br/>It rains.</p><p>Two &amp; three.</p></body></html>')


def formatted_epub() -> bytes:
    """An EPUB 3 of one formatted chapter and a style sheet."""
    return epub_package(FORMATTED_CHAPTER, {"OEBPS/style.css": "p { margin: 0 }"})
