"""transformer_hub.text.pipeline: texts in; per text its language, sentences, the model for its direction, one
decoding call per model, the text joined in its layout, and the record of what was done."""
import pytest
import torch

from helpers.decoding_fixtures import one_thread, random_model
from transformer_hub import Tokenizer, Transformer, TransformerConfig
from transformer_hub.decoding import generate
from transformer_hub.text import split_sentences
from transformer_hub.text.pipeline import ModelSet, OneModel, translate_texts

EN = "A man rides a bike down the street. A dog runs after him."
FR = "Un homme descend la rue à vélo. Un chien court derrière lui."
DE = "Ein Mann fährt mit dem Fahrrad die Straße hinunter. Ein Hund rennt hinter ihm her."


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


def card(direction_scores):
    """Card data as ``card_data_from_file`` gives it: lowercased BLEU on test_2016_flickr per direction."""
    return {"results": [{"dataset_name": "Multi30k", "dataset_type": "multi30k", "split": "test_2016_flickr",
                         "direction": d, "metric": "bleu", "metric_name": "sacreBLEU (lowercased)", "value": v}
                        for d, v in direction_scores.items()]}


@pytest.fixture(scope="module")
def models():
    """A bilingual en->de model that scores en->de best, and a multilingual en/de/fr one for the rest."""
    pair = random_model(src_lang="en", tgt_lang="de")
    pair.card_data = {"name": "en-de", **card({"en-de": 40.0})}
    texts = [EN, FR, DE, "Deux enfants jouent dans la neige.", "Two children play in the snow."]
    tok = Tokenizer.train(texts * 20, vocab_size=400, languages=["en", "de", "fr"])
    torch.manual_seed(0)
    multi = Transformer(TransformerConfig.preset("tiny", src_vocab_size=tok.src_vocab_size,
                                                 tgt_vocab_size=tok.tgt_vocab_size, languages=["en", "de", "fr"],
                                                 src_lang=None, tgt_lang=None)).eval()
    multi.tokenizer = tok
    multi.card_data = {"name": "multilingual", **card({"en-de": 30.0, "fr-de": 20.0})}
    return {"en-de": pair, "multilingual": multi}


class Counting(ModelSet):
    """A ModelSet that records each decoding call: (model name, its sentences)."""

    def __init__(self, models):
        super().__init__(models)
        self.calls = []

    def decode(self, name, sentences, *args, **kwargs):
        self.calls.append((name, list(sentences)))
        return super().decode(name, sentences, *args, **kwargs)


def test_each_text_goes_to_the_best_model_of_its_direction_one_call_per_model(models):
    chooser = Counting(models)
    texts = [EN, FR, EN + "\n\nTwo children play in the snow."]
    results = translate_texts(chooser, texts, src_lang="auto", tgt_lang="de", max_length=6)
    assert [r.model for r in results] == ["en-de", "multilingual", "en-de"]  # per text, not one for the batch
    assert [r.src_lang for r in results] == ["en", "fr", "en"] and all(r.src_lang_confidence > 0.5 for r in results)
    assert sorted(name for name, _ in chooser.calls) == ["en-de", "multilingual"]  # one call per model
    sentences = dict(chooser.calls)
    assert sentences["en-de"] == list(split_sentences(EN, "en").segments) * 2 + ["Two children play in the snow."]
    assert sentences["multilingual"] == list(split_sentences(FR, "fr").segments)
    assert all(r.engine == "pytorch" and r.unchanged is None for r in results)
    for result, model in zip(results, [models["en-de"], models["multilingual"], models["en-de"]]):  # joined texts
        alone = generate(model, [s.source for s in result.sentences], src_lang=result.src_lang, tgt_lang="de",
                         max_length=6)
        layout = split_sentences(result.source, result.src_lang)
        assert result.text == layout.join([a.text for a in alone])
        assert [s.text for s in result.sentences] == [a.text for a in alone]


def test_a_direction_no_model_serves_is_refused_by_name(models):
    with pytest.raises(ValueError, match=r"no model translates de -> cs; the models serve en->de, en->fr, "):
        translate_texts(ModelSet(models), [DE], src_lang="de", tgt_lang="cs")


def test_what_is_not_translated_comes_back_as_it_was_and_says_why(models):
    chooser = Counting(models)
    results = translate_texts(chooser, ["  \n", DE, EN], src_lang="auto", tgt_lang="de", keep_target_language=True,
                              max_length=6)
    assert [r.text for r in results[:2]] == ["  \n", DE]
    assert [r.unchanged for r in results] == ["empty", "already in German", None]
    assert [r.model for r in results] == [None, None, "en-de"] and results[1].src_lang == "de"
    assert [name for name, _ in chooser.calls] == ["en-de"]  # nothing else was decoded
    with pytest.raises(ValueError, match=r"text 1 is already in German \(detected, 1.00\), the target language"):
        translate_texts(chooser, [DE], src_lang="auto", tgt_lang="de")


def test_a_blank_text_comes_back_as_it_was_when_texts_are_whole_too(models):
    """split_sentences=False: a blank line (a corpus has them) is not a text without a direction."""
    chooser = Counting(models)
    results = translate_texts(chooser, ["", "  ", EN], src_lang="auto", tgt_lang="de", split_sentences=False)
    assert [r.text for r in results[:2]] == ["", "  "] and [r.unchanged for r in results[:2]] == ["empty", "empty"]
    assert [r.model for r in results] == [None, None, "en-de"]
    assert [name for name, _ in chooser.calls] == ["en-de"]


def test_a_text_too_short_to_detect_comes_back_as_it_was(models):
    chooser = Counting(models)
    results = translate_texts(chooser, ["Hi!", "A dog.", EN], src_lang="auto", tgt_lang="de", max_length=6)
    assert results[0].text == "Hi!" and results[0].model is None
    assert [r.unchanged for r in results] == ["too short to detect its language", None, None]
    assert results[0].src_lang == "en" and results[0].src_lang_confidence == pytest.approx(1 / 3)  # a blind guess among en, de, fr
    assert [r.model for r in results[1:]] == ["en-de", "en-de"] and results[1].text != "A dog."
    assert [name for name, _ in chooser.calls] == ["en-de"]
    assert translate_texts(chooser, ["Hi!"], src_lang="en", tgt_lang="de", max_length=6)[0].unchanged is None


def test_a_model_object_is_its_one_model_and_overrides_are_the_configs(models):
    model = models["en-de"]
    texts = [EN, "One dog.\nTwo cats."]
    given = translate_texts(model, texts, strategy="beam", beam_size=2, n_best=2, length_penalty=1.0, max_length=6)
    direct = translate_texts(OneModel(model), texts, strategy_config().replace(length_penalty=1.0), max_length=6)
    hypotheses = [[(h.text, h.normalized_score) for h in r.hypotheses] for r in direct]
    assert [[(h.text, h.normalized_score) for h in r.hypotheses] for r in given] == hypotheses
    assert [r.model for r in given] == ["en-de", "en-de"]
    second = [r.hypotheses[1].text for r in given[1].sentences]  # the 2nd best: each sentence's 2nd
    assert given[1].hypotheses[1].text == "\n".join(second)


def strategy_config():
    from transformer_hub.decoding import DecodingConfig

    return DecodingConfig(strategy="beam", beam_size=2, n_best=2)


def test_chunks_report_progress_and_each_result_carries_its_layout(models):
    chooser, reported, sizes = Counting(models), [], []
    texts = [EN + "\n\nTwo children play in the snow.", FR]
    results = translate_texts(chooser, texts, src_lang="auto", tgt_lang="de", max_length=6, chunk_size=2,
                              on_chunk=lambda done, total: reported.append((done, total)), check_size=sizes.append)
    assert sizes == [5]  # every sentence of the call, counted before any is decoded
    assert [len(s) for _, s in chooser.calls] == [2, 1, 2]  # en-de's three sentences two at a time, then French
    assert reported == [(0, 5), (2, 5), (3, 5)]
    for text, result in zip(texts, results):
        assert result.layout == split_sentences(text, result.src_lang)  # what the page's word view is built from
        assert result.layout.join([s.text for s in result.sentences]) == result.text
    whole = translate_texts(Counting(models), texts, src_lang="auto", tgt_lang="de", max_length=6)
    assert [r.text for r in whole] == [r.text for r in results]  # chunking changes nothing in the output


def test_check_size_refuses_before_anything_is_decoded(models):
    chooser = Counting(models)

    def refuse(count):
        raise ValueError(f"{count} sentences is too many")

    with pytest.raises(ValueError, match=r"^3 sentences is too many$"):
        translate_texts(chooser, [EN + " One more."], src_lang="en", tgt_lang="de", check_size=refuse)
    assert chooser.calls == []


def test_attention_asked_only_to_keep_pieces_verbatim_is_held_for_a_part_at_a_time(models, monkeypatch):
    """Cross-attention asked only to put wordless pieces (times, numbers) back is (layers, heads, T, S) floats a
    hypothesis: decoded ATTENTION_PART sentences at a time and dropped, not held for every sentence of the call
    (thousands of long out-of-domain sentences held gigabytes). The output is the one-call output."""
    from transformer_hub.text import pipeline

    texts = [f"The bus at 12:{n:02d} leaves. A dog at 12:{n + 1:02d} runs after it." for n in range(5)]
    whole = translate_texts(Counting(models), texts, src_lang="en", tgt_lang="de", max_length=6)
    monkeypatch.setattr(pipeline, "ATTENTION_PART", 3)
    counting = Counting(models)
    parts = translate_texts(counting, texts, src_lang="en", tgt_lang="de", max_length=6)
    assert [len(s) for _, s in counting.calls] == [3, 3, 3, 1]
    assert [r.text for r in parts] == [r.text for r in whole] and all("12:0" in r.text for r in parts)
    assert all(h.attention is None for r in parts for s in r.sentences for h in s.hypotheses)
