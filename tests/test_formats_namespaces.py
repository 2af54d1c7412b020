"""Documents that go through XML keep their namespaces: a translated EPUB's chapters stay XHTML (readers and
epubcheck reject an ``<html>`` without ``xmlns``), and every XML member of a .docx/.pptx/.odt/.odp declares
and uses the namespaces the original did, and opens in its own library."""
import io
import xml.etree.ElementTree as ElementTree
import zipfile

import docx
import pptx
import pytest
from lxml import etree
from odf.opendocument import load

from benchmarks.documents import formatted_docx, formatted_odt, formatted_pptx
from transformer_hub.formats import translate_document

XHTML, EPUB_OPS, SVG, XLINK, MATHML = ("http://www.w3.org/1999/xhtml", "http://www.idpf.org/2007/ops",
                                       "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink",
                                       "http://www.w3.org/1998/Math/MathML")
CHAPTERS = {
    "OEBPS/text/ch1.xhtml": f'''<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="{XHTML}" xmlns:epub="{EPUB_OPS}" xml:lang="en" lang="en">
<head><meta charset="utf-8"/><title>The first chapter.</title><link rel="stylesheet" href="../style.css"/></head>
<body epub:type="bodymatter">
<section epub:type="chapter" id="c1"><h1>The first chapter.</h1>
<p>A dog <em>runs</em> in the park. It rains.</p>
<p>See <a epub:type="noteref" href="#n1">the note</a>.</p>
<svg xmlns="{SVG}" xmlns:xlink="{XLINK}" viewBox="0 0 10 10"><image xlink:href="../img/a.png" width="10"/></svg>
<aside epub:type="footnote" id="n1"><p>A short note.</p></aside></section>
</body></html>''',
    "OEBPS/text/ch2.xhtml": f'''<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="{XHTML}" xmlns:m="{MATHML}"><head><title>Two.</title></head>
<body><p>Two children play in the snow.</p><p><m:math><m:mi>x</m:mi></m:math> is a letter.</p></body></html>''',
    "OEBPS/nav.xhtml": f'''<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="{XHTML}" xmlns:epub="{EPUB_OPS}"><head><title>Contents.</title></head>
<body><nav epub:type="toc"><ol><li><a href="text/ch1.xhtml">The first chapter.</a></li></ol></nav></body></html>''',
}
OTHERS = {
    "META-INF/container.xml": '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:'
                              'xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="appl'
                              'ication/oebps-package+xml"/></rootfiles></container>',
    "OEBPS/content.opf": '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"/>',
    "OEBPS/style.css": "p { margin: 0 }",
}


def make_book() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        for name, text in {**OTHERS, **CHAPTERS}.items():
            archive.writestr(name, text)
    return out.getvalue()


def german(sentences):
    """A fake translator that changes every length (inline tags land by proportion)."""
    return ["Das ist " + s.lower().rstrip(".!?") + " übersetzt." for s in sentences]


def members(data: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {m.filename: archive.read(m) for m in archive.infolist()}


def elements(xml: bytes) -> list:
    """Every element's qualified tag, its in-scope namespace declarations and its attributes' qualified names."""
    root = etree.fromstring(xml, etree.XMLParser(resolve_entities=False, no_network=True))
    return [(e.tag, set(e.nsmap.items()), set(e.attrib)) for e in root.iter(etree.Element)]


def assert_keeps_namespaces(before: bytes, after: bytes, name: str) -> None:
    """The same elements in the same namespaces, none losing a declaration or an attribute (the writer may add
    some, e.g. ``xml:space="preserve"`` on a run whose text now starts with a space)."""
    old, new = elements(before), elements(after)
    assert [tag for tag, _, _ in new] == [tag for tag, _, _ in old], name
    for (tag, declared, attributes), (_, declared_now, attributes_now) in zip(old, new):
        assert declared <= declared_now and attributes <= attributes_now, (name, tag)


def test_a_translated_epub_keeps_every_chapters_namespaces_and_python_reads_each_back():
    book = make_book()
    before, after = members(book), members(translate_document(book, ".epub", german, "en"))
    assert list(after) == list(before)
    for name in CHAPTERS:
        assert after[name] != before[name]  # translated ...
        assert elements(after[name]) == elements(before[name]), name  # ... with every namespace kept
        root = ElementTree.fromstring(after[name])  # Python's own parser
        assert root.tag == f"{{{XHTML}}}html"
    chapter = ElementTree.fromstring(after["OEBPS/text/ch1.xhtml"])
    section = chapter.find(f".//{{{XHTML}}}section")
    assert section.get(f"{{{EPUB_OPS}}}type") == "chapter"
    assert chapter.find(f".//{{{SVG}}}image").get(f"{{{XLINK}}}href") == "../img/a.png"
    assert "Das ist a dog runs in the park übersetzt." in "".join(chapter.itertext())
    assert b"<!DOCTYPE html>" in after["OEBPS/text/ch1.xhtml"]
    for name in OTHERS:
        assert after[name] == before[name]


@pytest.mark.parametrize("suffix, make, opens", [
    (".docx", formatted_docx, lambda data: docx.Document(io.BytesIO(data))),
    (".pptx", formatted_pptx, lambda data: pptx.Presentation(io.BytesIO(data))),
    (".odt", formatted_odt, lambda data: load(io.BytesIO(data))),
])
def test_office_documents_keep_every_xml_members_namespaces_and_open_in_their_library(suffix, make, opens):
    original = make()
    translated = translate_document(original, suffix, german, "en")
    opens(translated)
    before, after = members(original), members(translated)
    assert sorted(after) == sorted(before)  # python-pptx writes the parts in its own order
    xml_members = [n for n in before if n.endswith(".xml") or n.endswith(".rels")]
    assert xml_members
    changed = [n for n in xml_members if after[n] != before[n]]
    assert changed  # the text went somewhere ...
    for name in xml_members:  # ... and no namespace was lost or renamed
        assert_keeps_namespaces(before[name], after[name], name)


def test_an_odp_keeps_its_namespaces():
    from odf.draw import Frame, Page, TextBox
    from odf.opendocument import OpenDocumentPresentation
    from odf.style import MasterPage, PageLayout
    from odf.text import P

    document = OpenDocumentPresentation()
    layout = PageLayout(name="L")
    document.automaticstyles.addElement(layout)
    master = MasterPage(name="M", pagelayoutname=layout)
    document.masterstyles.addElement(master)
    page, frame, box = Page(masterpagename=master), Frame(width="9cm", height="2cm", x="1cm", y="1cm"), TextBox()
    box.addElement(P(text="A slide sentence."))
    frame.addElement(box)
    page.addElement(frame)
    document.presentation.addElement(page)
    out = io.BytesIO()
    document.write(out)
    translated = translate_document(out.getvalue(), ".odp", german, "en")
    load(io.BytesIO(translated))
    before, after = members(out.getvalue()), members(translated)
    assert after["content.xml"] != before["content.xml"]
    for name in ("content.xml", "styles.xml", "META-INF/manifest.xml"):
        assert_keeps_namespaces(before[name], after[name], name)
