"""Forced scoring (decoding/scoring.py): the beam's own scores for its outputs, every layout and tag position."""
from pathlib import Path

import pytest

from helpers.decoding_fixtures import one_thread
from helpers.scoring_models import MULTILINGUAL, random_model
from helpers.tolerances import f32, score
from transformer_hub import Transformer
from transformer_hub.decoding import generate
from transformer_hub.decoding.scoring import fits, score_ids, score_texts, source_ids

SHIPPED = Path(__file__).resolve().parents[1] / "space" / "models" / "multilingual"
TEXTS = ["a big dog .", "two small people near the water .", "green shirt ."]


MODELS = {"bilingual": {}, "decoder-only": dict(layout="decoder-only"), "source tags": MULTILINGUAL,
          "decoder tags": dict(MULTILINGUAL, tag_position="decoder")}


def languages(model) -> dict:
    return dict(src_lang="en", tgt_lang="de") if model.config.multilingual else {}


def beam_and_forced(model, texts, alpha: float = 0.6, batch_size: int = 64):
    """The beam's n-best hypotheses and their forced scores, in the same order."""
    results = generate(model, texts, strategy="beam", beam_size=4, n_best=4, length_penalty=alpha,
                       **languages(model))
    lang = languages(model)
    ids = source_ids(model, texts, lang.get("src_lang"), lang.get("tgt_lang"))
    hyps, sources = [], []
    for i, result in enumerate(results):
        for hyp in result.hypotheses:
            if hyp.finished:  # a hypothesis cut at its length cap has no eos to score
                hyps.append(hyp)
                sources.append(ids[i])
    return hyps, score_ids(model, sources, [h.tokens for h in hyps], alpha=alpha, batch_size=batch_size)


@pytest.mark.parametrize("kind", list(MODELS))
@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_forced_scores_equal_the_beams_scores_for_its_outputs(kind, alpha):
    with one_thread():
        hyps, forced = beam_and_forced(random_model(**MODELS[kind]), TEXTS, alpha)
    assert len(hyps) >= 6
    for hyp, got in zip(hyps, forced):
        assert got.token_logprobs == f32(hyp.token_logprobs)
        assert got.score == score(hyp.score, len(hyp))
        assert got.normalized_score == score(hyp.normalized_score, len(hyp))
        assert len(got) == len(hyp.tokens) + 1  # eos counts in |Y|


def test_batches_of_one_give_the_scores_of_one_batch():
    with one_thread():
        model = random_model(**MULTILINGUAL)
        _, together = beam_and_forced(model, TEXTS)
        _, alone = beam_and_forced(model, TEXTS, batch_size=1)
    assert [s.score for s in alone] == f32([s.score for s in together], scale=20)


def test_texts_are_tokenized_as_generate_does():
    model = random_model(**MULTILINGUAL)
    targets = ["ein grosser hund .", "gruen"]
    got = score_texts(model, TEXTS[:2], targets, src_lang="en", tgt_lang="fr")
    tok = model.tokenizer
    by_ids = score_ids(model, [[tok.lang_tag_id("fr")] + tok.encode(t) + [model.config.eos_id] for t in TEXTS[:2]],
                       [tok.encode(t, side="target") for t in targets])
    assert [s.score for s in got] == [s.score for s in by_ids]
    assert got[0].score < 0 and len(got[1]) == len(tok.encode("gruen", side="target")) + 1


def test_an_empty_target_scores_eos_alone():
    model = random_model()
    (got,) = score_texts(model, ["a dog ."], [""])
    assert len(got) == 1 and got.score < 0


@pytest.mark.parametrize("name", ["source tags", "decoder tags", "decoder-only"])
def test_a_target_too_long_for_the_decoder_is_none_when_asked(name):
    model = random_model(**dict(MODELS[name], max_len=24))
    long = " ".join(["two small people near the water ."] * 6)
    sources, targets = ["a dog .", "a dog .", long], ["green shirt .", long, "a big dog ."]
    lang = languages(model)
    ids = source_ids(model, sources, lang.get("src_lang"), lang.get("tgt_lang"))
    tgt = [model.tokenizer.encode(t, side="target") for t in targets]
    assert fits(model, ids, tgt) == [True, False, True]
    got = score_texts(model, sources, targets, too_long="none", **languages(model))
    alone = score_texts(model, [sources[0], sources[2]], [targets[0], targets[2]], **languages(model))
    assert got[1] is None and [got[0].score, got[2].score] == pytest.approx([g.score for g in alone], rel=1e-5)
    with pytest.raises(ValueError, match="does not fit the model"):
        score_texts(model, sources, targets, **languages(model))
    with pytest.raises(ValueError, match="too_long must be 'raise' or 'none'"):
        score_texts(model, sources, targets, too_long="skip", **languages(model))


@pytest.mark.parametrize("call, error, message", [
    (lambda m: score_texts(m, ["a"], ["b", "c"], src_lang="en", tgt_lang="de"), ValueError, "1 sources but 2 targets"),
    (lambda m: score_texts(m, "a", ["b"], src_lang="en", tgt_lang="de"), TypeError, "lists of strings"),
    (lambda m: score_texts(m, ["a"], ["b"], src_lang="en"), ValueError, "needs tgt_lang"),
    (lambda m: score_texts(m, ["a"], ["b"], src_lang="en", tgt_lang="xx"), ValueError, "xx"),
    (lambda m: score_ids(m, [[2]], [[5]], batch_size=0), ValueError, "batch_size must be >= 1"),
    (lambda m: score_ids(m, [[2]], [[5] * 300]), ValueError, "does not fit the model"),
])
def test_bad_calls_say_what_is_wrong(call, error, message):
    with pytest.raises(error, match=message):
        call(random_model(**MULTILINGUAL))


@pytest.mark.skipif(not (SHIPPED / "model.safetensors").is_file(), reason="the shipped multilingual model is absent")
def test_the_shipped_model_scores_its_own_beam_outputs():
    sources = ["A man rides a bike.", "Two dogs play.", "A red car."]
    model = Transformer.from_pretrained(SHIPPED)
    with one_thread():
        results = generate(model, sources, strategy="beam", beam_size=5, n_best=5, src_lang="en", tgt_lang="fr")
        ids = source_ids(model, sources, "en", "fr")
        pairs = [(ids[i], h) for i, r in enumerate(results) for h in r.hypotheses]
        forced = score_ids(model, [s for s, _ in pairs], [h.tokens for _, h in pairs])
    for (_, hyp), got in zip(pairs, forced):
        assert got.normalized_score == score(hyp.normalized_score, len(hyp))


def test_a_source_longer_than_the_model_reads_is_truncated_as_generate_does():
    model = random_model()
    long_source = [5] * (model.config.max_len + 10) + [model.config.eos_id]
    with pytest.warns(UserWarning, match="truncated to 64 tokens"):
        (cut,) = score_ids(model, [long_source], [[6, 7]])
    (expected,) = score_ids(model, [[5] * 63 + [model.config.eos_id]], [[6, 7]])
    assert cut.score == expected.score
