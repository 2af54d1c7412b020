"""A pasted text of two image captions (Multi30k's style) and two software sentences (LibreOffice help's) through
the shipped models and their domain classifier: the library (v4 alone: each sentence with its own domain tag;
v4 beside the captions-only en-de: each sentence with its own domain's model), ``POST /translate``,
``/translate_file`` and the page's note, which say how many sentences were read as each domain and how to read
them all as one."""
import urllib.request
from pathlib import Path

import pytest

from transformer_hub import Transformer
from transformer_hub.decoding import DecodingConfig, generate
from transformer_hub.text.pipeline import ModelSet, translate_texts

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "space" / "models"
V4 = MODELS / "multilingual-v4"
CAPTIONS = ["A man in a red shirt is riding a bike down the street.", "Two dogs are playing in the snow."]
SOFTWARE = ["Click the Save button to save the document.", "To insert a table, choose Insert - Table."]
MIXED = " ".join(CAPTIONS + SOFTWARE)
DOMAINS = ["captions"] * 2 + ["software"] * 2

pytestmark = [pytest.mark.slow,  # loads the shipped models
              pytest.mark.skipif(not (V4 / "domains.json").is_file(), reason="the shipped models are not here")]


@pytest.fixture(scope="module")
def v4() -> Transformer:
    return Transformer.from_pretrained(V4)


def test_v4_reads_each_sentence_with_its_own_domain_tag(v4):
    (result,) = translate_texts(v4, [MIXED], src_lang="en", tgt_lang="de", strategy="greedy")
    assert [s.source for s in result.sentences] == CAPTIONS + SOFTWARE
    assert [s.domain for s in result.sentences] == DOMAINS and all(s.domain_confidence > 0.99 for s in result.sentences)
    assert result.mixed_domains and result.domain_counts == {"captions": 2, "software": 2}
    # the tag each sentence was read with: the second source id (after the target language's)
    assert [s.source_ids[1] for s in result.sentences] == [v4.tokenizer.domain_tag_id(d) for d in DOMAINS]
    # before, the whole text was told once (captions, the classifier says of it) and every sentence read so
    assert v4.tokenizer.domain_tag_id("captions") != v4.tokenizer.domain_tag_id("software")


def test_v4_beside_the_captions_model_sends_each_sentence_to_its_domains_model(v4):
    models = ModelSet({"en-de": Transformer.from_pretrained(MODELS / "en-de"), "multilingual-v4": v4})
    expected = {d: models.choose("en", "de", "fast", d) for d in ("captions", "software")}
    assert expected["software"] == "multilingual-v4"  # the cards: v4 alone scores software
    (result,) = translate_texts(models, [MIXED], src_lang="en", tgt_lang="de", strategy="greedy")
    assert [(s.domain, s.model) for s in result.sentences] == [(d, expected[d]) for d in DOMAINS]
    for sentence, domain in zip(result.sentences, DOMAINS):
        model = models.models[expected[domain]]
        alone = generate(model, [sentence.source], strategy="greedy", src_lang="en", tgt_lang="de",
                         domain=domain if model.config.domains else None)[0]
        assert sentence.text == alone.text and sentence.source_ids == alone.source_ids


@pytest.fixture(scope="module")
def served():
    from helpers.space_fixtures import LIMITS, serving

    with serving([MODELS / "en-de", V4], LIMITS) as running:
        yield running


def library(served, text: str, domain: str) -> str:
    """``text`` as the library translates it alone with the model the Space chooses for ``domain`` and its tag."""
    from helpers.space_fixtures import LIMITS

    ctx = served.demo.space_context
    name = ctx.chooser.best("en", "de", domain)
    model = Transformer.from_pretrained(ctx.store.spec(name).source)
    config = DecodingConfig(strategy="beam", beam_size=4, length_penalty=0.6, max_length=LIMITS.max_output_tokens)
    return generate(model, [text], config, src_lang="en", tgt_lang="de",
                    domain=domain if model.config.domains else None)[0].text


def test_rest_translate_serves_each_sentence_with_its_domains_model_and_says_so(served):
    from test_rest import call

    status, answer, _ = call(served, "/translate", {"q": MIXED, "source": "en", "target": "de", "engine": "pytorch"})
    assert status == 200, answer
    assert answer["translatedText"] == " ".join(library(served, s, d) for s, d in zip(CAPTIONS + SOFTWARE, DOMAINS))
    for sentence in SOFTWARE:  # read as captions (the whole text's domain, before), they come out otherwise
        assert library(served, sentence, "software") != library(served, sentence, "captions")
    assert answer["domain"] == "captions"  # a tie: the whole text's own
    assert answer["model"] == served.demo.space_context.chooser.best("en", "de", "captions")
    assert answer["domains"] == {"captions": 2, "software": 2}
    assert answer["warnings"] == ["mixed domains: 2 sentences read as captions, 2 as software, each translated as "
                                  "its own; to translate all of them as one, send domain (captions or software)"]
    status, one, _ = call(served, "/translate", {"q": [MIXED, CAPTIONS[0]], "source": "en", "target": "de",
                                                 "engine": "pytorch", "domain": "software"})
    assert status == 200 and one["domain"] == ["software", "software"] and "domains" not in one
    assert one["translatedText"][1] == library(served, CAPTIONS[0], "software")


def test_rest_translate_file_and_the_page_name_the_mixed_domains(served):
    import requests

    from space.pictures import word_view
    from space.serving import service

    answer = requests.post(served.url.rstrip("/") + "/translate_file", files={"file": ("mixed.txt", MIXED.encode())},
                           data={"source": "en", "target": "de", "engine": "pytorch"}, timeout=120).json()
    assert answer["domain"] == "captions" and answer["domains"] == {"captions": 2, "software": 2}
    assert answer["warnings"][0].startswith("mixed domains: 2 sentences read as captions, 2 as software")
    with urllib.request.urlopen(answer["translatedFileUrl"], timeout=60) as response:
        got = response.read().decode()
    assert got == " ".join(library(served, s, d) for s, d in zip(CAPTIONS + SOFTWARE, DOMAINS))
    ctx = served.demo.space_context
    text, _, note, data = service.translate_view(ctx, MIXED, "auto", "beam", source_lang="en", target_lang="de",
                                                 engine="pytorch")
    assert text == got and data["domains"] == {"captions": 2, "software": 2}
    assert ("domains told per sentence: 2 sentences read as **image captions**, 2 as **software documentation**, "
            "each translated as its own (to translate all of them as one, choose it in the Domain menu)") in note
    names = [ctx.chooser.best("en", "de", d) for d in ("captions", "software")]
    assert names == ["en-de", "multilingual-v4"] and "models **en-de**, **multilingual-v4** · engine" in note
    # software read as captions (the menu's choice) goes to the captions-only model: the unsure note says so, and
    # where to choose another domain
    _, _, note, _ = service.translate_view(ctx, " ".join(SOFTWARE), "auto", "beam", source_lang="en",
                                           target_lang="de", engine="pytorch", domain="captions")
    assert "⚠ The model is unsure of" in note
    assert f"{word_view.DOMAIN_NOTE} {word_view.DOMAIN_MENU_NOTE}" in note
