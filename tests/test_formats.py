"""Document formats: each file translated with a fake translator, reopened with its own library, its structure
compared with the original's (paragraphs, runs and their styles, cells, cues and timings, slides, inline tags)."""
import io
import zipfile

import docx
import pptx
import pytest
import srt
from bs4 import BeautifulSoup
from odf import teletype
from odf.opendocument import load
from odf.text import H, P, Span

from benchmarks.documents import (FORMATTED_CHAPTER, SUBTITLES, formatted_docx, formatted_epub, formatted_odt,
                                  formatted_pptx, make_odp)
from helpers.document_fixtures import docx_shape, epub_shape, odf_shape, pptx_shape
from transformer_hub.formats import (DOCUMENT_FORMATS, DocumentError, document_formats, document_texts, extensions,
                                     register_format, translate_document, translate_document_texts, translate_html)
from transformer_hub.formats.layout import Document, Translated


class Recorder:
    """A fake translator that keeps every call: ``upper`` keeps each sentence's length (marks land exactly),
    ``german`` changes lengths (marks land by proportion)."""

    def __init__(self, how: str = "upper") -> None:
        self.calls, self.how = [], how

    def __call__(self, sentences):
        self.calls.append(list(sentences))
        if self.how == "upper":
            return [s.upper() for s in sentences]
        return ["Das ist " + s.lower().rstrip(".!?") + " übersetzt." for s in sentences]


# --------------------------------------------------------------------------- the layout map
def test_positions_stay_in_their_sentence_and_between_sentences_nothing_moves():
    fake = Recorder("german")
    done, = translate_document_texts(["  Hello big world. Bye now!\n\nEnd."], fake, "en")
    assert fake.calls == [["Hello big world.", "Bye now!", "End."]]
    assert done.target == "  Das ist hello big world übersetzt. Das ist bye now übersetzt.\n\nDas ist end übersetzt."
    assert done.position(0) == 0 and done.position(2) == 2                   # leading spaces
    assert done.target[done.position(18):done.position(19)] == " "          # the space between sentences 1 and 2
    assert done.position(len(done.source)) == len(done.target)
    start, end = done.spans[1][2:]
    assert start <= done.position(24) <= end                                # inside "Bye now!": inside its translation
    assert done.target[done.position(8):].startswith(("big", " big", "hello", "ist"))  # snapped to a word boundary


def test_pieces_cut_the_translation_where_the_runs_were():
    done, = translate_document_texts(["Hello big world."], Recorder("upper"), "en")
    assert done.pieces([0, 6, 9, 16]) == ["HELLO ", "BIG", " WORLD."]
    with pytest.raises(ValueError, match="bounds must rise"):
        done.pieces([0, 9, 6, 16])


def test_one_call_for_all_texts_and_a_wrong_count_is_an_error():
    fake = Recorder()
    translate_document_texts(["One. Two.", "", "   ", "Three."], fake, "en")
    assert fake.calls == [["One.", "Two.", "Three."]]
    with pytest.raises(ValueError, match="returned 1 translations for 2 sentences"):
        translate_document_texts(["One. Two."], lambda s: ["x"], "en")
    with pytest.raises(DocumentError, match="3 sentences to translate, the limit is 2"):
        translate_document_texts(["One. Two. Three."], fake, "en", max_sentences=2)


# --------------------------------------------------------------------------- html
PAGE = ("<p>Hello <b>big <i>red</i></b> dog &amp; cat. The <a href=\"/x?a=1&amp;b=2\" title=\"Keep me\">link "
        "here</a> works.</p>\n<script>var s = '<b>not text</b>';</script>\n<ul><li>One item</li><li>Run "
        "<code>ls -l</code> now.</li></ul><!-- a comment -->")


def test_html_with_same_length_translations_keeps_every_tag_exactly():
    out = translate_html(PAGE, Recorder("upper"), "en")
    assert out == PAGE.replace("Hello", "HELLO").replace("big", "BIG").replace("red<", "RED<").replace(
        "dog", "DOG").replace("cat.", "CAT.").replace("The <a", "THE <a").replace("link here", "LINK HERE").replace(
        "works", "WORKS").replace("One item", "ONE ITEM").replace("Run ", "RUN ").replace("now.", "NOW.")


def test_html_text_equals_the_sentences_translated_as_text_and_structure_is_kept():
    fake = Recorder("german")
    out = translate_html(PAGE, fake, "en")
    sentences = fake.calls[0]
    assert sentences == ["Hello big red dog & cat.", "The link here works.", "One item", "Run now."]
    soup, original = BeautifulSoup(out, "lxml"), BeautifulSoup(PAGE, "lxml")
    assert [t.name for t in soup.find_all(True)] == [t.name for t in original.find_all(True)]
    assert [t.attrs for t in soup.find_all(True)] == [t.attrs for t in original.find_all(True)]
    assert soup.p.get_text() == " ".join(fake(sentences[:2]))
    first, second = soup.find_all("li")
    assert first.get_text() == fake(["One item"])[0] and second.code.get_text() == "ls -l"
    assert " ".join(second.get_text().replace("ls -l", " ").split()) == fake(["Run now."])[0]
    assert soup.script.string == "var s = '<b>not text</b>';" and soup.code.string == "ls -l"
    assert "&amp;" in out and 'href="/x?a=1&amp;b=2"' in out and "<!-- a comment -->" in out
    assert soup.b.i is not None and soup.b.get_text().strip() and soup.a.get_text().strip()  # nested tags keep text


def test_html_document_keeps_its_head_and_doctype_and_skips_pre():
    page = ("<!DOCTYPE html><html><head><title>The title.</title><style>p {color: red}</style></head><body>"
            "<div>Intro text<p>Line one<br>line two.</p><pre>  keep   me  </pre></div></body></html>")
    out = translate_html(page, Recorder("upper"), "en")
    assert out.startswith("<!DOCTYPE html>") and "<title>THE TITLE.</title>" in out
    assert "<pre>  keep   me  </pre>" in out and "<style>p {color: red}</style>" in out
    assert "<p>LINE ONE<br>LINE TWO.</p>" in out and "<div>INTRO TEXT<p>" in out


def test_html_file_round_trip_in_its_declared_encoding():
    page = "<html><head><meta charset=\"iso-8859-1\"></head><body><p>Café au lait.</p></body></html>"
    out = translate_document(page.encode("latin-1"), ".html", Recorder("upper"), "fr")
    assert "<p>CAFÉ AU LAIT.</p>" in out.decode("utf-8")


# --------------------------------------------------------------------------- txt and srt
def test_txt_keeps_lines_blank_lines_and_line_ends():
    data = "First line. Second one.\r\n\r\n  Indented.\r\n".encode("utf-8")
    assert translate_document(data, ".txt", Recorder()) == b"FIRST LINE. SECOND ONE.\r\n\r\n  INDENTED.\r\n"
    with pytest.raises(DocumentError, match="not UTF-8 text .byte 0xff at position 0"):
        translate_document(b"\xff\xfe\x00x", ".txt", Recorder())




def test_srt_timings_and_numbers_byte_identical_cues_rebroken():
    fake = Recorder("german")
    out = translate_document(SUBTITLES.encode(), ".srt", fake, "en").decode()
    assert fake.calls == [["A dog runs across the park.", "Hello.", "Two sentences.", "In one cue."]]
    before, after = SUBTITLES.split("\r\n"), out.split("\r\n")
    timing = [i for i, line in enumerate(before) if "-->" in line]
    assert [after[i] for i in timing] == [before[i] for i in timing]            # byte for byte, extras included
    assert [after[i - 1] for i in timing] == ["1", "2", "3"]
    cues, original = list(srt.parse(out)), list(srt.parse(SUBTITLES))
    assert [(c.index, c.start, c.end, c.proprietary) for c in cues] == \
           [(c.index, c.start, c.end, c.proprietary) for c in original]
    assert len(cues[0].content.split("\n")) == 2                                 # two lines as before
    assert cues[0].content.replace("\n", " ") == fake(["A dog runs across the park."])[0]
    assert cues[2].content == " ".join(fake(["Two sentences.", "In one cue."]))


def test_malformed_srt_is_refused_with_the_parsers_reason():
    with pytest.raises(DocumentError, match="not valid SRT"):
        translate_document(b"this is not\na subtitle file", ".srt", Recorder())


# --------------------------------------------------------------------------- docx




def test_docx_keeps_paragraphs_runs_styles_tables_and_header():
    data = formatted_docx()
    same = translate_document(data, ".docx", Recorder("upper"), "en")
    document, original = docx.Document(io.BytesIO(same)), docx.Document(io.BytesIO(data))
    assert [p.text for p in document.paragraphs] == [p.text.upper() for p in original.paragraphs]
    assert [[r.text for r in p.runs] for p in document.paragraphs] == \
           [[r.text.upper() for r in p.runs] for p in original.paragraphs]
    assert document.tables[0].cell(1, 1).tables[0].cell(0, 0).text == "NESTED CELL."
    assert document.sections[0].header.paragraphs[0].text == "HEADER TEXT."
    fake = Recorder("german")
    changed = translate_document(data, ".docx", fake, "en")
    assert docx_shape(changed) == docx_shape(data)
    assert len(fake.calls) == 1 and "Nested cell." in fake.calls[0] and "Header text." in fake.calls[0]
    assert docx.Document(io.BytesIO(changed)).paragraphs[2].text == fake(["Tab"])[0] + "\t" + " ".join(
        fake(["inside.", "Then a second sentence."]))


def test_docx_that_is_not_a_zip_or_a_zip_bomb_is_refused():
    with pytest.raises(DocumentError, match=r"not a valid Word \(\.docx\) document \(not a ZIP archive"):
        translate_document(b"PK not really", ".docx", Recorder())
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"<" + b" " * (65 << 20))
    with pytest.raises(DocumentError, match="unpacks to 68,157,441 bytes, the limit is 67,108,864"):
        translate_document(bomb.getvalue(), ".docx", Recorder())


# --------------------------------------------------------------------------- pptx




def test_pptx_keeps_slides_shapes_runs_tables_and_notes():
    data = formatted_pptx()
    same = pptx.Presentation(io.BytesIO(translate_document(data, ".pptx", Recorder("upper"), "en")))
    texts = [[s.text_frame.text for s in slide.shapes if s.has_text_frame] for slide in same.slides]
    assert texts == [[f"SLIDE {n} TITLE.", "FIRST POINT.\nMIXED BOLD WORDS."] for n in range(2)]
    assert [r.text for r in same.slides[0].placeholders[1].text_frame.paragraphs[1].runs] == ["MIXED ", "BOLD WORDS."]
    table = [s for s in same.slides[1].shapes if s.has_table][0].table
    assert (table.cell(0, 0).text, table.cell(0, 1).text) == ("LEFT CELL.", "RIGHT CELL.")
    assert same.slides[1].notes_slide.notes_text_frame.text == "SPEAKER NOTES."
    assert pptx_shape(translate_document(data, ".pptx", Recorder("german"), "en")) == pptx_shape(data)


# --------------------------------------------------------------------------- odt / odp




def test_odt_keeps_paragraphs_spans_breaks_and_cells():
    data = formatted_odt()
    same = load(io.BytesIO(translate_document(data, ".odt", Recorder("upper"), "en")))
    assert [teletype.extractText(p) for p in same.getElementsByType(P)] == \
           ["START WITH BOLD WORDS AND MORE.\nAFTER THE BREAK.", "LEFT CELL.", "RIGHT CELL."]
    assert teletype.extractText(same.getElementsByType(Span)[0]) == "BOLD WORDS"
    assert teletype.extractText(same.getElementsByType(H)[0]) == "A HEADING."
    assert odf_shape(translate_document(data, ".odt", Recorder("german"), "en")) == odf_shape(data)


def test_odp_is_read_by_the_same_code():
    translated = load(io.BytesIO(translate_document(make_odp("A slide sentence."), ".odp", Recorder(), "en")))
    assert [teletype.extractText(p) for p in translated.getElementsByType(P)] == ["A SLIDE SENTENCE."]


# --------------------------------------------------------------------------- epub
def test_epub_chapters_translated_as_xhtml_and_every_other_member_kept():
    data = formatted_epub()
    fake = Recorder("german")
    out = translate_document(data, ".epub", fake, "en")
    assert fake.calls == [["Chapter one.", "Chapter one.", "A dog runs in the park.", "It rains.", "Two & three."]]
    assert epub_shape(out) == epub_shape(data)  # members, order, compression, other files, the chapter's tags
    with zipfile.ZipFile(io.BytesIO(out)) as archive:
        assert archive.infolist()[0].filename == "mimetype" and archive.infolist()[0].compress_type == 0
        chapter = archive.read("OEBPS/ch1.xhtml").decode()
    same = translate_document(data, ".epub", Recorder("upper"), "en")
    with zipfile.ZipFile(io.BytesIO(same)) as archive:
        upper = archive.read("OEBPS/ch1.xhtml").decode()
    assert upper == FORMATTED_CHAPTER.replace("Chapter one.", "CHAPTER ONE.").replace("A dog <em>runs</em> in the park.",
        "A DOG <em>RUNS</em> IN THE PARK.").replace("It rains.", "IT RAINS.").replace("Two &amp; three.",
        "TWO &amp; THREE.")
    assert "Das ist two & three übersetzt." not in chapter and "Das ist two &amp; three übersetzt." in chapter
    bomb = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(bomb, "w") as archive:
        for member in source.infolist():
            text = source.read(member)
            if member.filename.endswith(".xhtml"):  # an external entity: a file of the server's, if expanded
                text = text.replace(b"<html", b'<!DOCTYPE html [<!ENTITY x SYSTEM "file:///etc/passwd">]><html')
                text = text.replace(b"Two &amp; three.", b"Two &x; three.")
            archive.writestr(member, text)
    with pytest.raises(DocumentError, match="declares XML entities"):
        translate_document(bomb.getvalue(), ".epub", fake)
    with pytest.raises(DocumentError, match=r"not a valid EPUB \(\.epub\) document: it has no META-INF/container.xml"):
        translate_document(formatted_docx(), ".epub", fake)


# --------------------------------------------------------------------------- the front door
def test_formats_listed_and_others_refused():
    assert extensions() == (".txt", ".html", ".htm", ".srt", ".docx", ".pptx", ".odt", ".odp", ".epub", ".po", ".pot",
                            ".xlf", ".xliff", ".json")
    assert [f.title for f in document_formats()] == [
        "Plain text (.txt)", "HTML (.html, .htm)", "SubRip subtitles (.srt)", "Word (.docx)", "PowerPoint (.pptx)",
        "OpenDocument (.odt, .odp)", "EPUB (.epub)", "gettext catalog (.po, .pot)", "XLIFF (.xlf, .xliff)",
        "i18next JSON (.json)"]
    with pytest.raises(DocumentError, match=r"\.pdf is not a format that can be translated; use one of .txt"):
        translate_document(b"%PDF-1.4", ".pdf", Recorder())
    with pytest.raises(DocumentError, match="too large: 11 bytes, the limit is 10"):
        translate_document(b"Hello world", ".txt", Recorder(), max_bytes=10)
    with pytest.raises(DocumentError, match="empty"):
        translate_document(b"", ".txt", Recorder())
    assert document_texts(SUBTITLES.encode(), ".SRT") == ["A dog runs across the park.", "Hello.",
                                                          "Two sentences. In one cue."]


def test_a_format_is_one_registration():
    """A registered format is read, listed and written back without another change; a bad extension is refused."""
    def read(data: bytes) -> Document:
        return Document([data.decode("utf-8")], lambda done: done[0].target.encode("utf-8"))

    register_format("shout", "Shouted text", (".shout",), read, order=15)
    try:
        assert extensions()[:2] == (".txt", ".shout") and document_formats()[1].label == "Shouted text"
        assert translate_document(b"A dog runs. Bye.", ".SHOUT", Recorder("upper"), "en") == b"A DOG RUNS. BYE."
        with pytest.raises(ValueError, match="document format 'shout' is already registered"):
            register_format("shout", "Again", (".again",), read)
    finally:
        DOCUMENT_FORMATS.unregister("shout")
    assert ".shout" not in extensions()
    with pytest.raises(ValueError, match=r"lower case and start with a dot, got \['PO'\]"):
        register_format("po", "Gettext", ("PO",), read)

def test_translated_positions_reject_offsets_outside_the_text():
    done = Translated("ab", "AB", ((0, 2, 0, 2),))
    with pytest.raises(ValueError, match="offset 3 outside a text of 2 characters"):
        done.position(3)
