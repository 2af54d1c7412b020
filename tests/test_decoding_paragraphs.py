"""translate_texts: a text's sentences in one batch, the layout kept, languages detected; generate is sentence-level."""
from __future__ import annotations

import math
import random

import pytest
import torch

from helpers.tolerances import f64
from helpers.decoding_fixtures import synthetic_pairs, trained_model
from transformer_hub import Tokenizer, Transformer, TransformerConfig
from transformer_hub.decoding import engines, generate
from transformer_hub.text import split_sentences, translate_texts

LANGS = ["en", "de", "fr", "cs"]
ONE_PER_LANGUAGE = {
    "en": "A man rides a bike down the street while a dog runs after him.",
    "de": "Ein Mann fährt mit dem Fahrrad die Straße hinunter und ein Hund läuft hinter ihm her.",
    "fr": "Un homme descend la rue à vélo et un chien court derrière lui.",
    "cs": "Muž jede na kole po ulici a pes běží za ním.",
}
PARAGRAPHS = "A dog runs. Two children play in the park.\n\nA man sits on a bench.\n"


@pytest.fixture(scope="module")
def multilingual() -> Transformer:
    """A random-init tiny model for en, de, fr and cs (tags in its vocabulary): enough to check the plumbing."""
    tokenizer = Tokenizer.train(list(ONE_PER_LANGUAGE.values()) * 4, vocab_size=400, languages=LANGS)
    torch.manual_seed(0)
    cfg = TransformerConfig.preset("tiny", src_vocab_size=tokenizer.src_vocab_size,
                                   tgt_vocab_size=tokenizer.tgt_vocab_size, languages=LANGS)
    model = Transformer(cfg).eval()
    model.tokenizer = tokenizer
    return model


def test_split_sentences_translates_each_sentence_in_one_batch_and_keeps_the_layout(tiny_model, monkeypatch):
    calls = []
    original = engines.decode_batch
    monkeypatch.setattr(engines, "decode_batch", lambda model, rows, *a, **k: calls.append(len(rows)) or
                        original(model, rows, *a, **k))
    texts = [PARAGRAPHS, "One more sentence. And the last one!"]
    results = translate_texts(tiny_model, texts, max_length=8)
    assert calls == [5]  # every sentence of both texts in one batch
    layouts = [split_sentences(t, "en") for t in texts]
    for text, layout, result in zip(texts, layouts, results):
        alone = [generate(tiny_model, [s], max_length=8)[0].text for s in layout.segments]
        assert [r.text for r in result.sentences] == alone
        assert result.text == layout.join(alone)
        assert result.source == text and result.src_lang == "en" and result.src_lang_confidence is None
        best = [r.best for r in result.sentences]
        assert result.best.score == f64(sum(h.score for h in best), scale=len(best))  # float64 sums, any order
        assert result.best.tokens == [t for h in best for t in h.tokens]
    assert results[0].text.count("\n\n") == 1 and results[0].text.endswith("\n")


def test_split_sentences_off_and_prefix_refused(tiny_model):
    whole = translate_texts(tiny_model, [PARAGRAPHS.strip()], split_sentences=False, max_length=8)[0]
    assert whole.sentences is None and len(whole.source_ids) > 0
    with pytest.raises(ValueError, match="prefix forces the start of one sentence: it cannot be used with "
                                         "split_sentences=True"):
        translate_texts(tiny_model, [PARAGRAPHS], prefix="Ein")


def test_blank_text_with_split_sentences_keeps_its_whitespace(tiny_model):
    result = translate_texts(tiny_model, ["\n \n"])[0]
    assert result.text == "\n \n" and result.sentences == []


def test_text_without_words_is_passed_through_not_decoded(multilingual, monkeypatch):
    calls = []
    original = engines.decode_batch
    monkeypatch.setattr(engines, "decode_batch", lambda model, rows, *a, **k: calls.append(len(rows)) or
                        original(model, rows, *a, **k))
    texts = ["😀 🎉", "12:45", "...", "♪ A dog runs. ♪"]
    results = translate_texts(multilingual, texts, src_lang="auto", tgt_lang="de", max_length=4)
    assert calls == [1]  # only "A dog runs." reaches the model
    assert [r.text for r in results[:3]] == texts[:3] and all(r.sentences == [] for r in results[:3])
    assert [r.src_lang for r in results[:3]] == [None] * 3  # nothing to detect, reported as not detected
    inner = results[3].sentences[0].text
    assert results[3].text == f"♪ {inner} ♪" and results[3].sentences[0].source == "A dog runs."


def test_auto_detects_each_text_in_one_call(multilingual):
    targets = {"en": "de", "de": "fr", "fr": "cs", "cs": "en"}
    results = translate_texts(multilingual, list(ONE_PER_LANGUAGE.values()), src_lang="auto", split_sentences=False,
                              tgt_lang=[targets[lang] for lang in ONE_PER_LANGUAGE], max_length=4)
    assert [r.src_lang for r in results] == LANGS
    assert all(0.9 < r.src_lang_confidence <= 1.0 for r in results)
    # the detected code is what the model was told: the same output as naming the language
    named = generate(multilingual, list(ONE_PER_LANGUAGE.values()), src_lang=LANGS,
                     tgt_lang=[targets[lang] for lang in ONE_PER_LANGUAGE], max_length=4)
    assert [r.source_ids for r in results] == [r.source_ids for r in named]
    assert [r.src_lang_confidence for r in named] == [None] * 4


def test_auto_per_text_with_split_sentences(multilingual):
    results = translate_texts(multilingual, [ONE_PER_LANGUAGE["de"] + " Die Sonne scheint.", ONE_PER_LANGUAGE["en"]],
                              src_lang=["auto", "en"], tgt_lang="fr", max_length=4)
    assert [r.src_lang for r in results] == ["de", "en"]
    assert [s.src_lang for s in results[0].sentences] == ["de", "de"]
    assert results[1].src_lang_confidence is None


def test_bilingual_model_refuses_other_languages_with_a_clear_message(tiny_model):
    with pytest.raises(ValueError, match=r"text 1 looks like French \(fr\), which this model does not read; "
                                         r"it serves en, de"):
        translate_texts(tiny_model, [ONE_PER_LANGUAGE["fr"]], src_lang="auto")
    with pytest.raises(ValueError, match=r"text 2 is already in German \(detected, 1.00\), the target language"):
        translate_texts(tiny_model, ["A dog runs.", ONE_PER_LANGUAGE["de"]], src_lang="auto")
    assert translate_texts(tiny_model, ["A dog runs in the park."], src_lang="auto", max_length=4)[0].src_lang == "en"


def test_detection_is_not_run_when_the_language_is_given(tiny_model, monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("language detection ran")

    from transformer_hub.text import pipeline

    monkeypatch.setattr(pipeline, "detect_language", fail)
    monkeypatch.setattr(pipeline, "unserved_language", fail)
    given = generate(tiny_model, ["Un chien."], src_lang="en", max_length=4)[0]
    split = translate_texts(tiny_model, ["Un chien. Un chat."], src_lang="en", max_length=4)[0]
    assert (split.src_lang, split.src_lang_confidence, len(split.sentences)) == ("en", None, 2)
    default = generate(tiny_model, ["Un chien."], max_length=4)[0]
    assert (given.src_lang, given.src_lang_confidence) == ("en", None)
    assert (default.src_lang, default.src_lang_confidence) == ("en", None)


def test_auto_needs_the_pipeline_and_a_model_that_names_its_languages(tiny_model, make_model):
    with pytest.raises(ValueError, match="src_lang='auto' detects each text's language: use transformer_hub.text"):
        generate(tiny_model, ["A dog."], src_lang="auto")  # generate is sentence-level
    with pytest.raises(ValueError, match="split_sentences is the text pipeline's option: use "
                                         "transformer_hub.text.translate_texts"):
        generate(tiny_model, ["A dog. A cat."], split_sentences=True)
    with pytest.raises(ValueError, match="src_lang='auto' needs a model that names its languages"):
        translate_texts(make_model(src_lang=None, tgt_lang=None), ["A dog."], src_lang="auto")


def test_confidence_is_the_mean_token_probability():
    """What the confidence is, on in-domain and scrambled input alike (whether a model trained for seconds is
    surer of the first is a property of its training, not of decoding, so it is not asserted)."""
    model = trained_model()
    rng = random.Random(3)
    in_domain = [s for s, _ in synthetic_pairs(40, seed=11, min_words=4, max_words=8)]
    scrambled = ["".join(rng.sample(s, len(s))) for s in in_domain]  # the same characters, no words left
    for hyp in [r.best for r in generate(model, in_domain + scrambled)]:
        assert hyp.confidence == f64(sum(map(math.exp, hyp.token_logprobs)) / len(hyp.token_logprobs))
        assert 0.0 < hyp.confidence <= 1.0
