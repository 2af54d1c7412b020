"""Lexically constrained beam search: target phrases the output must contain (decoding/constraints.py)."""
import pytest
import torch

from helpers.decoding_fixtures import one_thread, pad_ids, trained_model
from helpers.tolerances import exactly, score
from test_decoding_beam import A, B, EOS, TableModel, exhaustive, lp, output
from transformer_hub import Tokenizer, Transformer, TransformerConfig
from transformer_hub.decoding import generate
from transformer_hub.decoding.beam import beam
from transformer_hub.decoding.constraints import START, Constraints, Phrase, deal
from transformer_hub.export.engine import choose_engine
from transformer_hub.decoding.config import DecodingConfig
from transformer_hub.decoding.stepper import Batch

TEXTS = ["a dog runs in the park .", "two people sit on a bench .", "the child plays with a red ball .",
         "a man in a blue shirt ."]
BEAM = dict(strategy="beam", beam_size=4)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


@pytest.fixture(scope="module")
def model():
    return trained_model()


def spelled(model, result, phrase):
    """Whether the best output's tokens contain one of ``phrase``'s tokenizations, and its text the phrase."""
    p = Phrase.from_text(model.tokenizer, phrase)
    tokens = result.best.tokens
    found = any(tuple(tokens[i:i + len(v)]) == v for v in p.variants for i in range(len(tokens)))
    return found and phrase in result.text


def test_the_automaton_tracks_partial_abandoned_and_restarted_matches():
    spec = Constraints([Phrase("ab", ((5, 6), (5, 7, 8))), Phrase("c", ((9,),))])
    assert spec.top == 3 + 1 and spec.needed == 3  # banks count tokens: a phrase at its longest spelling
    state = spec.advance(START, 5)
    assert state == (0, ((0, 0, 1), (0, 1, 1))) and spec.bank(state) == 1
    assert sorted(spec.wanted(state)) == [6, 7, 9]
    assert spec.advance(state, 4) == START  # abandoned
    assert spec.advance(spec.advance(state, 5), 6) == (1, ())  # "5 5 6": restarted at the second 5, met
    done = spec.advance(spec.advance(spec.advance(spec.advance(state, 7), 8), 3), 9)
    assert done == (3, ()) and spec.done(done) and spec.bank(done) == 4 and spec.met(done) == [True, True]
    assert spec.bank(spec.advance(START, 9)) == 1 and spec.bank(spec.advance(spec.advance(START, 9), 5)) == 2
    assert spec.wanted(done) == []


def test_beams_are_dealt_across_banks_best_first_highest_bank_first():
    # candidates best first, with their banks: the best one first, then round by round, highest bank first
    assert deal([0, 0, 2, 1, 2, 0], 6) == [0, 2, 3, 1, 4, 5]
    assert deal([1, 0, 2, 2], 3) == [0, 2, 1]
    assert deal([0, 0, 0], 2) == [0, 1]  # one bank: the candidates' own order
    assert deal([], 3) == []


def test_every_satisfiable_constraint_appears(model):
    cases = [["blau"], ["hund"], ["rot", "kind"], ["gross hund"], ["wasser", "bank"]]
    results = generate(model, [TEXTS[i % len(TEXTS)] for i in range(len(cases))], constraints=cases, **BEAM)
    for result, phrases in zip(results, cases):
        assert result.best.constraints_met == [True] * len(phrases)
        assert all(spelled(model, result, p) for p in phrases), (result.text, phrases)
        assert result.best.finished and result.warnings == [] and result.constraints == phrases


def test_multi_token_constraints_are_met_and_n_best_all_meet_them(model):
    phrase = "blau gross kind"
    assert len(Phrase.from_text(model.tokenizer, phrase).variants[0]) > 3  # several pieces per word
    (result,) = generate(model, [TEXTS[0]], constraints=[[phrase]], n_best=3, return_alternatives=3, **BEAM)
    assert len(result.hypotheses) == 3
    for hyp in result.hypotheses:
        assert hyp.constraints_met == [True] and phrase in hyp.text and hyp.finished
        assert len(hyp.alternatives) == len(hyp.token_logprobs)


def test_no_constraints_is_plain_beam_search_token_for_token(model):
    options = dict(n_best=3, return_alternatives=2, return_search=True, **BEAM)
    plain = generate(model, TEXTS, **options)
    for given in (None, [[]] * len(TEXTS)):
        assert [[h.tokens for h in r.hypotheses] for r in generate(model, TEXTS, constraints=given, **options)] == \
            [[h.tokens for h in r.hypotheses] for r in plain]
    # in a batch where another sentence is constrained, the others still take the plain path, trace included
    mixed = generate(model, TEXTS, constraints=[[], ["blau"], [], []], **options)
    for i in (0, 2, 3):
        assert [h.tokens for h in mixed[i].hypotheses] == [h.tokens for h in plain[i].hypotheses]
        assert [h.score for h in mixed[i].hypotheses] == [h.score for h in plain[i].hypotheses]
        assert mixed[i].search.to_dict() == plain[i].search.to_dict()
        assert mixed[i].best.constraints_met is None
    assert mixed[1].best.constraints_met == [True]


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_batch_with_different_constraints_equals_the_sentences_one_by_one(model, use_cache):
    cases = [["blau"], [], ["rot", "hund"], ["gross kind"]]
    together = generate(model, TEXTS, constraints=cases, use_cache=use_cache, n_best=2, **BEAM)
    for text, phrases, result in zip(TEXTS, cases, together):
        (alone,) = generate(model, [text], constraints=[phrases], use_cache=use_cache, n_best=2, **BEAM)
        assert [h.tokens for h in result.hypotheses] == [h.tokens for h in alone.hypotheses]
        assert [h.score for h in result.hypotheses] == [score(h.score, len(h)) for h in alone.hypotheses]


def test_a_constraint_that_cannot_fit_ends_with_a_warning(model):
    results = generate(model, TEXTS[:2], constraints=[["blau gross kind"], ["blau"]], max_length=4, **BEAM)
    assert results[0].best.constraints_met == [False] and len(results[0].best) == 4
    (warning,) = results[0].warnings
    assert "'blau gross kind' could not be placed within the 4 output tokens" in warning
    assert results[1].best.constraints_met == [True] and results[1].warnings == []


def test_forced_prefix_and_constraints_together(model):
    (result,) = generate(model, [TEXTS[1]], prefix="zwei leute ", constraints=[["blau"]], **BEAM)
    assert result.text.startswith("zwei leute") and "blau" in result.text
    assert result.best.constraints_met == [True]


def languages_model(tag_position: str) -> Transformer:
    langs = ["en", "de", "fr"]
    lines = [f"{lang}w{i} {lang}x{i % 3}" for lang in langs for i in range(40)]
    tokenizer = Tokenizer.train(lines, vocab_size=320, languages=langs)
    cfg = TransformerConfig.preset("tiny", src_vocab_size=tokenizer.src_vocab_size,
                                   tgt_vocab_size=tokenizer.tgt_vocab_size, languages=langs, tag_position=tag_position)
    torch.manual_seed(0)
    model = Transformer(cfg)
    model.tokenizer = tokenizer
    with torch.no_grad():  # a random model that ends now and then
        model.body.generator.weight[cfg.eos_id] *= 3.0
    return model.eval()


@pytest.mark.parametrize("tag_position", ["source", "decoder"])
def test_multilingual_models_meet_constraints_per_direction(tag_position):
    model = languages_model(tag_position)
    texts, targets, cases = ["enw1 enx1", "enw2 enx2", "dew3"], ["de", "fr", "en"], [["dew7"], ["frx2", "frw5"], []]
    together = generate(model, texts, src_lang=["en", "en", "de"], tgt_lang=targets, constraints=cases, **BEAM)
    for i, (phrases, result) in enumerate(zip(cases, together)):
        assert all(p in result.text for p in phrases) and result.warnings == []
        (alone,) = generate(model, [texts[i]], src_lang=["en", "en", "de"][i], tgt_lang=targets[i],
                            constraints=[phrases], **BEAM)
        assert alone.best.tokens == result.best.tokens


class NoConstraints:
    def check(self, config, workers=1):
        pass

    def decode(self, model, sources, caps, config, progress=False, prefixes=None, workers=1):
        raise AssertionError("never reached")


def test_bad_uses_are_clear_errors(model):
    with pytest.raises(ValueError, match="constraints need beam search: use strategy='beam'"):
        generate(model, TEXTS[:1], constraints=[["blau"]])
    with pytest.raises(ValueError, match="constraints need the PyTorch engine .* NoConstraints has no constrained"):
        generate(model, TEXTS[:1], constraints=[["blau"]], engine=NoConstraints(), **BEAM)
    with pytest.raises(ValueError, match=r"one list of target phrases per text \(2\)"):
        generate(model, TEXTS[:2], constraints=[["blau"]], **BEAM)
    with pytest.raises(ValueError, match="got the string 'blau': wrap it in a list"):
        generate(model, TEXTS[:1], constraints=["blau"], **BEAM)
    with pytest.raises(ValueError, match="a constraint is an empty phrase"):
        generate(model, TEXTS[:1], constraints=[[" "]], **BEAM)
    with pytest.raises(ValueError, match="a constraint is 1001 characters, more than the 1000 allowed"):
        generate(model, TEXTS[:1], constraints=[["x" * 1001]], **BEAM)
    with pytest.raises(ValueError, match="33 constraints for one sentence; at most 32"):
        generate(model, TEXTS[:1], constraints=[[f"w{i}" for i in range(33)]], **BEAM)


def test_auto_engine_runs_pytorch_for_a_constrained_call():
    config = DecodingConfig(**BEAM)
    assert choose_engine("auto", config, constrained=True) == "pytorch"
    assert choose_engine("ctranslate2", config, constrained=True) == "ctranslate2"  # named: its check refuses


@pytest.mark.slow
def test_a_decoding_pool_runs_the_same_constrained_search(model):
    from transformer_hub.decoding import DecodingPool

    cases = [["blau"], [], ["rot", "hund"], ["gross kind"]]
    expected = generate(model, TEXTS, constraints=cases, **BEAM)
    with DecodingPool(model, processes=1, threads=1) as pool:
        got = generate(model, TEXTS, constraints=cases, engine=pool, **BEAM)
    assert [r.best.tokens for r in got] == [r.best.tokens for r in expected]
    assert [r.best.constraints_met for r in got] == [r.best.constraints_met for r in expected]


# --------------------------------------------------------------------------- hand-built models: known answers
def constrained_beam(table, k: int, constrained: bool = True, cap: int = 4, **options):
    """Beam search on a :class:`TableModel` (see test_decoding_beam.py), the output bound to contain token b."""
    spec = [Constraints([Phrase("b", ((B,),))])] if constrained else None
    batch = Batch(pad_ids([[5, EOS]]), torch.tensor([2]), torch.tensor([cap]), constraints=spec)
    config = DecodingConfig(strategy="beam", beam_size=k, n_best=1, max_length=cap, **options)
    return beam(TableModel(table), batch, config)[0][0]


def best_with_b(table, cap: int = 4, alpha: float = 0.6):
    """The best output (exhaustive search) that contains b, with its normalised score."""
    return next((s, seq) for s, seq in exhaustive(table, cap, alpha) if B in seq)


# "a a b" is the best output and its path is the best candidate at every step; "b ..." meets the constraint
# sooner, so a search that favoured the banks of met constraints over the scores would keep "b a" and "b b".
PLAIN_BEST_HAS_B = {
    (): {A: lp(0.55), B: lp(0.45)},
    (A,): {A: lp(0.6), B: lp(0.4)},
    (B,): {A: lp(0.5), B: lp(0.5)},
    (A, A): {B: 0.0},
    (A, B): {EOS: lp(0.5), A: lp(0.5)},
    (B, A): {EOS: lp(0.6), A: lp(0.4)},
}
# the best output, "a a", has no b; the best that has one is "a b a" (eos is blocked until b is met)
PLAIN_BEST_LACKS_B = {
    (): {A: lp(0.7), B: lp(0.3)},
    (A,): {A: lp(0.7), B: lp(0.3)},
    (B,): {A: lp(0.5), B: lp(0.5)},
    (A, A): {EOS: lp(0.9), A: lp(0.1)},
    (A, B): {A: lp(0.95), EOS: lp(0.05)},
    (B, A): {EOS: lp(0.5), A: lp(0.5)},
    (A, B, A): {EOS: 0.0},
}


def test_a_constraint_the_plain_best_meets_changes_nothing():
    """Dynamic beam allocation keeps the best candidate of every step whatever its bank, so an output whose
    path is the best candidate at each step survives the constraint; here that output is also the optimum.
    (It keeps no more than that: an output whose path ranks lower at some step may lose its beam to a
    candidate of a higher bank, as it may lose it to a better-scored one in plain beam search.)"""
    best_score, best = exhaustive(PLAIN_BEST_HAS_B, 4, 0.6)[0]
    assert best == [A, A, B, EOS]
    for k in (1, 2):  # one beam: the best candidate or the one that met b ("b" at step 0)
        plain = constrained_beam(PLAIN_BEST_HAS_B, k=k, constrained=False)
        got = constrained_beam(PLAIN_BEST_HAS_B, k=k)
        assert output(plain) == output(got) == best and got.constraints_met == [True]
        assert got.score == exactly(plain.score) and got.normalized_score == score(best_score, len(best))


def test_a_constraint_the_plain_best_misses_gives_the_best_output_that_meets_it():
    plain = constrained_beam(PLAIN_BEST_LACKS_B, k=2, constrained=False)
    assert output(plain) == [A, A, EOS]  # no b
    expected_score, expected = best_with_b(PLAIN_BEST_LACKS_B)
    assert expected == [A, B, A, EOS]
    for k in (2, 8):  # two beams (one of them dealt to the bank that met b), and a beam that prunes nothing
        got = constrained_beam(PLAIN_BEST_LACKS_B, k=k, early_stopping="never")
        assert output(got) == expected and got.constraints_met == [True]
        assert got.normalized_score == score(expected_score, len(expected))
