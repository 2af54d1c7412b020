"""Documents of every format built with their own libraries, and their structure read back (for the format and
REST tests): paragraphs, runs and their styles, tables and cells, slides, spans and breaks."""
import io
import zipfile

import docx
import pptx
from odf.opendocument import OpenDocumentText, load
from odf.style import Style, TextProperties
from odf.table import Table, TableCell, TableRow
from odf.text import H, LineBreak, P, Span

SUBTITLES = ("1\r\n00:00:01,000 --> 00:00:02,500\r\nA dog runs\r\nacross the park.\r\n\r\n"
             "2\r\n00:00:03,250 --> 00:00:04,000 X1:10\r\nHello.\r\n\r\n"
             "3\r\n01:02:03,004 --> 01:02:05,000\r\nTwo sentences. In one cue.\r\n")

def make_docx() -> bytes:
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

def docx_shape(data: bytes):
    document = docx.Document(io.BytesIO(data))
    runs = [[(r.bold, r.italic, r.style.name) for r in p.runs] for p in document.paragraphs]
    cells = [[len(row.cells) for row in t.rows] for t in document.tables]
    return [p.style.name for p in document.paragraphs], runs, cells, len(document.tables[0].cell(1, 1).tables)

def make_pptx() -> bytes:
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

def pptx_shape(data: bytes):
    presentation = pptx.Presentation(io.BytesIO(data))
    shape = []
    for slide in presentation.slides:
        frames = [s.text_frame for s in slide.shapes if s.has_text_frame]
        shape.append([[[r.font.bold for r in p.runs] for p in f.paragraphs] for f in frames])
    return len(presentation.slides), shape

def make_odt() -> bytes:
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
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()

def odf_shape(data: bytes):
    document = load(io.BytesIO(data))
    paragraphs = document.getElementsByType(P) + document.getElementsByType(H)
    spans = [[s.getAttribute("stylename") for s in p.getElementsByType(Span)] for p in paragraphs]
    cells, breaks = document.getElementsByType(TableCell), document.getElementsByType(LineBreak)
    return len(paragraphs), spans, len(cells), len(breaks)


CHAPTER = ('<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Chapter '
           'one.</title></head><body><h1>Chapter one.</h1><p>A dog <em>runs</em> in the park.<br/>It rains.</p>'
           '<p>Two &amp; three.</p></body></html>')


def make_epub() -> bytes:
    """A minimal EPUB 3: its mimetype first and stored, a container, a package file, one chapter and a style."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")  # ZipInfo's default: stored
        archive.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:'
                         'names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" '
                         'media-type="application/oebps-package+xml"/></rootfiles></container>')
        archive.writestr("OEBPS/content.opf", '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
                         'version="3.0"><manifest><item id="c1" href="ch1.xhtml" media-type="application/xhtml+xml"/>'
                         '</manifest><spine><itemref idref="c1"/></spine></package>')
        archive.writestr("OEBPS/ch1.xhtml", CHAPTER)
        archive.writestr("OEBPS/style.css", "p { margin: 0 }")
    return out.getvalue()


def epub_shape(data: bytes):
    from bs4 import BeautifulSoup

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = [(m.filename, m.compress_type) for m in archive.infolist()]
        others = {n: archive.read(n) for n, _ in members if not n.endswith(".xhtml")}
        chapter = BeautifulSoup(archive.read("OEBPS/ch1.xhtml"), "xml")
    return members, others, [(t.name, t.attrs) for t in chapter.find_all(True)]
