"""The structure of a document read back (for the format and REST tests): paragraphs, runs and their styles, tables
and cells, slides, spans and breaks.  The documents themselves are ``benchmarks/documents.py``'s."""
import io
import zipfile

import docx
import pptx
from odf.opendocument import load
from odf.table import TableCell
from odf.text import H, LineBreak, P, Span


def docx_shape(data: bytes):
    document = docx.Document(io.BytesIO(data))
    runs = [[(r.bold, r.italic, r.style.name) for r in p.runs] for p in document.paragraphs]
    cells = [[len(row.cells) for row in t.rows] for t in document.tables]
    return [p.style.name for p in document.paragraphs], runs, cells, len(document.tables[0].cell(1, 1).tables)


def pptx_shape(data: bytes):
    presentation = pptx.Presentation(io.BytesIO(data))
    shape = []
    for slide in presentation.slides:
        frames = [s.text_frame for s in slide.shapes if s.has_text_frame]
        shape.append([[[r.font.bold for r in p.runs] for p in f.paragraphs] for f in frames])
    return len(presentation.slides), shape


def odf_shape(data: bytes):
    document = load(io.BytesIO(data))
    paragraphs = document.getElementsByType(P) + document.getElementsByType(H)
    spans = [[s.getAttribute("stylename") for s in p.getElementsByType(Span)] for p in paragraphs]
    cells, breaks = document.getElementsByType(TableCell), document.getElementsByType(LineBreak)
    return len(paragraphs), spans, len(cells), len(breaks)


def epub_shape(data: bytes):
    from bs4 import BeautifulSoup

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = [(m.filename, m.compress_type) for m in archive.infolist()]
        others = {n: archive.read(n) for n, _ in members if not n.endswith(".xhtml")}
        chapter = BeautifulSoup(archive.read("OEBPS/ch1.xhtml"), "xml")
    return members, others, [(t.name, t.attrs) for t in chapter.find_all(True)]
