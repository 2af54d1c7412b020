"""The translate tab's glossary box (space/serving/glossary.py, service.translate_view): the page's /translate with a
glossary gives the library's pipeline output for the same text and glossary, says which entries applied and what
could not fit, marks the term's words in the word view, and answers a malformed glossary with the REST API's
message."""
from __future__ import annotations

import html

import pytest

pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from helpers.space_fixtures import LIMITS, tiny_app  # noqa: E402
from space.hosting.limits import RequestError  # noqa: E402
from space.serving import service  # noqa: E402
from space.pictures import word_view  # noqa: E402

TEXT = "A dog runs in the park. Two men sit on a bench."
TSV = "dog\tWasserball\ncat\tKatze\n"


@pytest.fixture(scope="module")
def app(request):
    yield from tiny_app(request)


@pytest.fixture(scope="module")
def client(app):
    return gradio_client.Client(app.url, verbose=False)


@pytest.fixture(scope="module")
def model(app):
    from transformer_hub import Transformer

    return Transformer.from_pretrained(app.model_dir)


def page(client, app, text, glossary, entries_format="auto", max_length=0, engine="auto"):
    """The page's /translate: (text, note)."""
    out, _, note = client.predict(text, app.model, "beam", 4, 0.6, 1.0, 0.9, max_length, "en", "de", engine, False,
                                  glossary, entries_format, api_name="/translate")
    return out, note


def library(model, text, glossary, max_length=LIMITS.max_output_tokens):
    """The library's pipeline call with the page's options (beam 4, alpha 0.6, its sentences in one batch)."""
    from transformer_hub import translate_texts

    return translate_texts(model, [text], src_lang="en", tgt_lang="de", strategy="beam", beam_size=4,
                           length_penalty=0.6, max_length=max_length, glossary=glossary)[0]


def test_the_page_with_a_glossary_is_the_librarys_output_and_says_what_applied(client, app, model):
    out, note = page(client, app, TEXT, TSV)
    want = library(model, TEXT, {"dog": "Wasserball", "cat": "Katze"})
    assert out == want.text and "Wasserball" in out
    assert "Wasserball" not in library(model, TEXT, None).text  # the glossary, not the model, put it there
    assert "Glossary applied: “dog” → “Wasserball”" in note and "Katze" not in note, note
    assert "engine **pytorch**" in note  # auto, and a term applies: only PyTorch constrains
    csv_out, csv_note = page(client, app, TEXT, "dog,Wasserball\ncat,Katze\n")  # auto: no tab, so CSV
    assert (csv_out, csv_note.split("·")[0]) == (out, note.split("·")[0])


def test_a_glossary_whose_terms_do_not_occur_changes_nothing_and_says_so(client, app, model):
    out, note = page(client, app, TEXT, "cat\tKatze")
    assert out == library(model, TEXT, None).text
    assert "Glossary: none of its source terms occurs in the text." in note, note
    out, note = page(client, app, TEXT, "  \n")  # an empty box: no glossary at all
    assert "Glossary" not in note


def test_a_term_that_cannot_fit_is_a_warning_under_the_output(client, app, model):
    terms = "dog\tWasserball Wasserball Wasserball Wasserball"
    out, note = page(client, app, "A dog.", terms, max_length=3)
    want = library(model, "A dog.", terms, max_length=3)
    assert want.warnings and out == want.text
    assert f"⚠ Glossary: {want.warnings[0]}." in note, note


def test_the_word_view_marks_the_glossary_terms_words(app, model):
    ctx = app.demo.space_context
    text, _, _, data = service.translate_view(ctx, "A dog runs.", app.model, "beam", 4, 0.6, 1.0, 0.9, 0, "en",
                                              "de", "auto", False, "dog\tWasserball Fußball")
    marked = [w["text"] for w in data["words"] if w.get("glossary")]
    assert marked == ["Wasserball", "Fußball"] and "Wasserball Fußball" in text
    entries = word_view.highlighted(data)
    shown = "".join(t for t, label in entries if label == word_view.GLOSSARY).strip()  # punctuation rides with a word
    assert shown.rstrip(".,!?") == "Wasserball Fußball"
    assert word_view.colours(data)[word_view.GLOSSARY] == word_view.COLOURS[word_view.GLOSSARY]  # its legend entry
    plain = service.translate_view(ctx, "A dog runs.", app.model, "beam", 4, 0.6, 1.0, 0.9, 0, "en", "de")[3]
    assert not any(w.get("glossary") for w in plain["words"]) and word_view.GLOSSARY not in word_view.colours(plain)


def test_mark_terms_spells_words_as_shown():
    words = [{"text": "Ein", "space": True}, {"text": "roter", "space": True}, {"text": "Wagen", "space": True},
             {"text": ".", "space": False}, {"text": "E", "space": True}, {"text": "-", "space": False},
             {"text": "Mail", "space": False}]
    word_view.mark_terms(words, ["roter  Wagen", "E-Mail", "Wagen fährt"])
    assert [w["text"] for w in words if w.get("glossary")] == ["roter", "Wagen", "E", "-", "Mail"]


@pytest.mark.parametrize("glossary, options, message", [
    ("dog Wasserball", {"entries_format": "tsv"}, "Invalid request: glossary line 1: expected source<TAB>target, "
                                                  "got 1 field"),
    ("dog\tHund\ncat\tKatze\tx", {}, "Invalid request: glossary line 2: expected source<TAB>target, got 3 fields"),
    ("Dog,Hund\ndog,Rüde", {}, "Invalid request: glossary entry 2: the source term 'dog' is already entry 1"),
    ('"dog,Hund', {}, "Invalid request: glossary line 1: not valid CSV"),
    ("dog\t", {}, "Invalid request: glossary line 1: the target term is empty"),
    ("dog\tHund", {"engine": "ctranslate2"}, "Invalid request: glossary needs engine pytorch or auto"),
    ("dog\tHund", {"entries_format": "xml"}, "Invalid request: the glossary format must be one of auto, tsv, csv"),
])
def test_a_malformed_glossary_gets_the_rest_apis_message(client, app, glossary, options, message):
    with pytest.raises(Exception) as info:
        page(client, app, TEXT, glossary, **options)
    assert message in html.unescape(str(info.value)), str(info.value)  # a gr.Error's message is HTML


def test_the_glossary_needs_beam_search(app):
    with pytest.raises(RequestError, match="glossary needs the beam strategy"):
        service.translate_view(app.demo.space_context, TEXT, app.model, "greedy", glossary="dog\tHund")


def test_too_many_entries_and_a_long_term_are_refused(client, app):
    from transformer_hub.text.glossary import MAX_ENTRIES, MAX_TERM_CHARS

    many = "".join(f"term{i}\tWort{i}\n" for i in range(MAX_ENTRIES + 1))
    with pytest.raises(Exception, match=f"more than the {MAX_ENTRIES} entries allowed"):
        page(client, app, TEXT, many)
    with pytest.raises(Exception, match=f"more than the {MAX_TERM_CHARS} a term may have"):
        page(client, app, TEXT, "dog\t" + "x" * (MAX_TERM_CHARS + 1))
