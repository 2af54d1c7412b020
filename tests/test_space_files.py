"""Documents through the Space's decoder (every format, one code path) and the folder translated files are served
from: random names, expiry, deletion."""
from __future__ import annotations

import io

import docx
import pytest

from helpers.space_fixtures import model_context  # noqa: I001 - puts the repository root on sys.path
from space.rest import files
from space.serving import service
from space.hosting.limits import Limits
from transformer_hub.formats import DocumentError
from transformer_hub.text import split_sentences


LIMITS = Limits(max_file_bytes=100_000, max_file_sentences=8, document_chunk=2)


@pytest.fixture
def ctx(tmp_path, make_model):
    with model_context(tmp_path / "models", make_model(), LIMITS) as context:
        yield context


def reference(ctx, sentences):
    """The same sentences translated as plain text, as the REST route's decode does."""
    config = service.decoding_config(ctx, "beam", 4, 0.6)
    results, _ = service.run(ctx, "en-de", sentences, config, service.languages_for(ctx, "en-de", "en", "de"),
                             "pytorch")
    return [r.hypotheses[0].text for r in results]


def make_docx() -> bytes:
    document = docx.Document()
    paragraph = document.add_paragraph("A dog runs in the park. ")
    paragraph.add_run("Two children play.").bold = True
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "A man sits.", "A woman reads."
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_a_docx_is_translated_by_the_model_with_progress_and_its_structure(ctx):
    steps = []
    done = files.translate_file(ctx, make_docx(), "report.docx", "en", "de", engine="pytorch",
                                progress=lambda value, **_: steps.append(value))
    assert (done.name, done.model, done.engine, done.source, done.sentences) == \
           ("report.de.docx", "en-de", "pytorch", "en", 4)
    assert steps == [(0, 4), (2, 4)]  # document_chunk=2
    document = docx.Document(io.BytesIO(done.data))
    expected = reference(ctx, ["A dog runs in the park.", "Two children play.", "A man sits.", "A woman reads."])
    assert " ".join(" ".join(document.paragraphs[0].text.split()).split()) == " ".join(
        " ".join(expected[:2]).split())
    assert len(document.paragraphs[0].runs) == 2 and document.paragraphs[0].runs[1].bold
    assert [c.text for c in document.tables[0].rows[0].cells] == expected[2:]


def test_auto_detects_from_the_documents_text_and_srt_comes_back_with_its_timings(ctx):
    subtitles = "1\n00:00:01,000 --> 00:00:02,000\nA dog runs in the park.\n\n2\n00:00:03,000 --> 00:00:04,500\n" \
                "Two children play on the grass.\n"
    done = files.translate_file(ctx, subtitles.encode(), "movie.srt", "auto", "de", engine="pytorch")
    assert done.source == "en" and done.name == "movie.de.srt"
    lines = done.data.decode().split("\n")
    assert lines[:2] == ["1", "00:00:01,000 --> 00:00:02,000"] and lines[4:6] == ["2", "00:00:03,000 --> 00:00:04,500"]
    assert lines[2] == reference(ctx, ["A dog runs in the park."])[0]


def test_files_that_cannot_be_translated_are_refused_before_decoding(ctx):
    with pytest.raises(DocumentError, match=r"\.exe is not a format that can be translated"):
        files.translate_file(ctx, b"MZ", "tool.exe", "en", "de")
    too_many = " ".join(["A dog runs."] * 9).encode()
    with pytest.raises(DocumentError, match="9 sentences to translate, the limit is 8"):
        files.translate_file(ctx, too_many, "long.txt", "en", "de")
    assert split_sentences(too_many.decode(), "en").segments[0] == "A dog runs."


def test_a_documents_sentences_are_cut_and_its_domain_told_in_its_worker_never_here(ctx, monkeypatch):
    """The server process only hands a document's text on: cutting it into sentences and telling their domains,
    as long as the text (a .docx of 40,000 sentences was cut here before the limit of 1,000 was checked), happen in
    its worker (space/hosting/sandbox.py), whose process these counters do not reach; the document is translated
    all the same."""
    from transformer_hub.text import cut
    from transformer_hub.text.domain import DomainClassifier

    DomainClassifier.train({"captions": ["A dog runs in the park."], "software": ["Click the button."]}).save(
        ctx.store.spec("en-de").source)
    assert ctx.store.domain_classifier() is not None  # so "auto" asks it
    here = []
    split, score = cut.split_sentences, DomainClassifier.log_likelihoods
    monkeypatch.setattr(cut, "split_sentences", lambda *a, **k: here.append("split") or split(*a, **k))
    monkeypatch.setattr(DomainClassifier, "log_likelihoods", lambda *a, **k: here.append("domain") or score(*a, **k))
    done = files.translate_file(ctx, make_docx(), "report.docx", "en", "de", engine="pytorch")
    assert here == [] and done.sentences == 4
    expected = reference(ctx, ["A dog runs in the park.", "Two children play.", "A man sits.", "A woman reads."])
    assert [c.text for c in docx.Document(io.BytesIO(done.data)).tables[0].rows[0].cells] == expected[2:]


def test_a_client_that_left_gets_none_of_its_sentences_decoded(ctx):
    """``cancelled()`` (a REST client gone) reaches the decoder's queue: no part of the request is decoded."""
    from space.serving.batching import Cancelled

    calls = ctx.decoder.batcher.calls
    config = service.decoding_config(ctx, "beam", 4, 0.6)
    with pytest.raises(Cancelled, match="the client left before its sentences were decoded"):
        service.SpaceModels(ctx, cancelled=lambda: True).decode("en-de", ["A dog runs."] * 9, ["en"] * 9,
                                                                 ["de"] * 9, config)
    assert ctx.decoder.batcher.calls == calls and ctx.decoder.batcher.waiting == 0


class Clock:
    now = 100.0

    def __call__(self):
        return self.now


def test_output_folder_random_names_expiry_deletion_and_bounds(tmp_path):
    clock = Clock()
    folder = files.OutputFolder(tmp_path / "out", ttl=10, max_files=2, clock=clock)
    first = folder.add(b"one", "a.de.docx")
    assert first.endswith(".docx") and len(first) > 30 and "a.de" not in first
    path, download = folder.get(first)
    assert path.read_bytes() == b"one" and download == "a.de.docx" and path.parent == tmp_path / "out"
    assert folder.get("../" + first) is None and folder.get("a.de.docx") is None
    clock.now += 5
    second = folder.add(b"two", "b.txt")
    third = folder.add(b"three", "c.txt")              # over max_files: the oldest goes
    assert folder.get(first) is None and not (tmp_path / "out" / first).exists()
    clock.now += 10                                    # second and third expire at 115
    assert folder.get(second) is None and folder.get(third) is None
    assert list((tmp_path / "out").iterdir()) == []
    folder.close()
    assert not (tmp_path / "out").exists()


def test_file_ttl_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SPACE_FILE_TTL", "60")
    assert files.OutputFolder(tmp_path / "a").ttl == 60.0
    monkeypatch.setenv("SPACE_FILE_TTL", "soon")
    with pytest.raises(ValueError, match="SPACE_FILE_TTL must be a positive number of seconds, got 'soon'"):
        files.OutputFolder(tmp_path / "b")
    monkeypatch.setenv("SPACE_FILE_TTL", "0")
    with pytest.raises(ValueError, match="positive number of seconds, got '0'"):
        files.OutputFolder(tmp_path / "c")




def test_a_catalog_through_the_space_keeps_every_placeholder_and_passes_msgfmt(make_model, tmp_path):
    import shutil
    import subprocess

    import polib

    from transformer_hub.text.placeholders import find_pieces, strip_accelerator

    from test_formats_l10n import PO

    with model_context(tmp_path / "models", make_model(), Limits(max_file_sentences=50)) as ctx:
        done = files.translate_file(ctx, PO.encode(), "app.po", "en", "de", engine="pytorch")
    assert done.name == "app.de.po"
    out = polib.pofile(done.data.decode() + "\n")
    assert [(e.msgctxt, e.msgid) for e in out] == [(e.msgctxt, e.msgid) for e in polib.pofile(PO)]
    assert out.find("Save").msgstr == "Uložit" and out.metadata["Language"] == "de"  # a translator's, kept
    for entry in out:
        written = [entry.msgstr] if not entry.msgid_plural else list(entry.msgstr_plural.values())
        if not any(written):
            continue  # left for a translator: allowed, never broken
        assert entry.fuzzy or entry.obsolete or entry.msgid == "Save"  # machine output is marked for review
        for source, text in zip([entry.msgid, entry.msgid_plural or entry.msgid], written):
            assert sorted(p.text for p in find_pieces(text)) == sorted(p.text for p in find_pieces(source))
            assert bool(strip_accelerator(text, "_")[1]) == bool(strip_accelerator(source, "_")[1])
    if shutil.which("msgfmt"):
        path = tmp_path / "app.de.po"
        path.write_bytes(done.data)
        check = subprocess.run(["msgfmt", "--check", "--use-fuzzy", "-o", "/dev/null", str(path)],
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stderr


@pytest.mark.parametrize("text", ["Value: %1$s", "Hello {{person.name}}, welcome.", "Welcome, $Username!",
                                  "Press <b><i>Enter</i></b> now."])
def test_libretranslates_reported_placeholders_come_back_whole(ctx, text):
    from transformer_hub.text import translate_texts
    from transformer_hub.text.placeholders import same_pieces

    (result,) = translate_texts(service.SpaceModels(ctx, None, "pytorch"), [text], src_lang="en", tgt_lang="de",
                                split_sentences=True)
    assert same_pieces(text, result.text)
    assert result.text != text or result.sentences[0].warnings  # translated, or kept and said so
