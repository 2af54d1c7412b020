"""``POST /translate``'s ``glossary`` extension (space/rest/routes.py) over HTTP on loopback: terms applied as the library
applies them, engine auto resolved to PyTorch, the entries that applied in the answer, a malformed glossary a 400."""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

from helpers.space_fixtures import model_for_tests, serving
from space.hosting.limits import Limits

LIMITS = Limits(max_chars=300, max_lines=6, max_sentences=6, max_output_tokens=60, max_beam=6, max_models=4)
TEXTS = ["A dog runs in the park.", "Two men sit on a bench."]
TERMS = {"dog": "Wasserball"}


@pytest.fixture(scope="module")
def served(request):
    from helpers.corpus import cache_folder

    with serving([model_for_tests(cache_folder(request, "space"))], LIMITS) as running:
        yield running


def call(served, params, form: bool = False):
    """(status, parsed JSON) of one ``POST /translate``, as a JSON body or a form body."""
    body = urllib.parse.urlencode(params).encode() if form else json.dumps(params).encode()
    kind = "application/x-www-form-urlencoded" if form else "application/json"
    request = urllib.request.Request(served.url.rstrip("/") + "/translate", data=body, method="POST",
                                     headers={"Content-Type": kind})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def library(served, name, texts, **options):
    """What the library's text pipeline gives with the Space's /translate options."""
    from transformer_hub import Transformer, translate_texts
    from transformer_hub.decoding import DecodingConfig

    model = Transformer.from_pretrained(served.demo.space_context.store.spec(name).source)
    config = DecodingConfig(strategy="beam", beam_size=4, length_penalty=0.6, max_length=LIMITS.max_output_tokens)
    return translate_texts(model, texts, config, src_lang="en", tgt_lang="de", split_sentences=False, **options)


def test_a_glossary_is_applied_as_the_library_applies_it_and_engine_auto_is_pytorch(served):
    status, answer = call(served, {"q": TEXTS, "source": "en", "target": "de", "glossary": "dog\tWasserball\n"})
    assert status == 200, answer
    assert answer["engine"] == ["pytorch", "pytorch"]  # auto, and a term applies: only PyTorch constrains
    assert answer["glossary"] == [[{"source": "dog", "target": "Wasserball"}], []]
    assert "Wasserball" in answer["translatedText"][0] and "warnings" not in answer
    want = library(served, answer["model"][0], TEXTS, glossary=TERMS, engine="pytorch")
    assert answer["translatedText"] == [r.text for r in want]
    assert "Wasserball" not in library(served, answer["model"][0], TEXTS[:1], engine="pytorch")[0].text


def test_a_json_object_and_a_form_field_give_the_same_answer(served):
    params = {"q": TEXTS[0], "source": "en", "target": "de"}
    _, tsv = call(served, {**params, "glossary": "dog\tWasserball"})
    status, obj = call(served, {**params, "glossary": TERMS})
    assert status == 200 and obj == tsv and obj["glossary"] == [{"source": "dog", "target": "Wasserball"}]
    status, form = call(served, {**params, "glossary": json.dumps(TERMS)}, form=True)
    assert status == 200 and form == tsv
    status, none_found = call(served, {**params, "glossary": {"cat": "Katze"}})
    assert status == 200 and none_found["glossary"] == [] and "Wasserball" not in none_found["translatedText"]


def test_a_glossary_applies_to_html_as_to_its_visible_text(served):
    """format=html: the blocks go through the same pipeline, so the term lands in the markup's text, and the
    entries that applied are listed per document."""
    params = {"source": "en", "target": "de", "glossary": TERMS}
    status, html = call(served, {**params, "q": [f"<p>{TEXTS[0]}</p>", f"<p><b>{TEXTS[1]}</b></p>"],
                                 "format": "html"})
    assert status == 200, html
    _, plain = call(served, {**params, "q": TEXTS})
    first, second = plain["translatedText"]
    assert html["translatedText"] == [f"<p>{first}</p>", f"<p><b>{second}</b></p>"]
    assert html["glossary"] == plain["glossary"] == [[{"source": "dog", "target": "Wasserball"}], []]
    assert html["engine"] == ["pytorch", "pytorch"] and html["model"] == plain["model"]


@pytest.mark.parametrize("extra, message", [
    ({"glossary": "dog Wasserball"}, "glossary line 1: expected source<TAB>target, got 1 field"),
    ({"glossary": "dog\tHund\ncat\tKatze\tx"}, "glossary line 2: expected source<TAB>target, got 3 fields"),
    ({"glossary": "Dog\tHund\ndog\tRüde"}, "glossary entry 2: the source term 'dog' is already entry 1"),
    ({"glossary": {"dog": 3}}, "glossary entry 'dog': the target term must be text, got int"),
    ({"glossary": {"dog": ""}}, "glossary entry 'dog': the target term is empty"),
    ({"glossary": ["dog", "Hund"]}, "glossary must be TSV text (source<TAB>target per line) or a JSON object"),
    ({"glossary": "{dog: Hund}"}, "glossary is not valid JSON"),
    ({"glossary": "x" * 201 + "\tHund"}, "the source term is 201 characters, more than the 200"),
    ({"glossary": TERMS, "engine": "ctranslate2"}, "glossary needs engine pytorch or auto"),
])
def test_a_malformed_glossary_is_a_400_naming_the_problem(served, extra, message):
    status, answer = call(served, {"q": TEXTS[0], "source": "en", "target": "de", **extra})
    assert status == 400 and set(answer) == {"error"}
    assert answer["error"].startswith("Invalid request: ") and message in answer["error"]
