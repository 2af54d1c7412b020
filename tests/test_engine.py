"""engine="ctranslate2" behind generate(): same result fields, mapped and refused options, the conversion cache."""
import sys

import pytest
import torch

from helpers.decoding_fixtures import one_thread, random_model
from helpers.tolerances import RUNTIME_REL, f64, runtime, score
from transformer_hub import cli
from transformer_hub.cli.options import one_line
from transformer_hub.decoding import DecodingConfig, generate, length_penalty
from transformer_hub.decoding import get_engine
from transformer_hub.export import CTranslate2Engine, MissingDependencyError, engine_available

pytest.importorskip("ctranslate2")

TEXTS = ["a dog runs in the park .", "", "two people sit on a bench with a red ball .", "the man", "   ", "water"]


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


@pytest.fixture
def model():
    return random_model(seed=2, share_embeddings=True)


def check_consistent(hyp, alpha):
    """A hypothesis' own numbers agree: score = sum of token log-probs, normalized = score / GNMT lp."""
    if not hyp.tokens and not hyp.token_logprobs:  # an empty source's empty result
        return
    assert len(hyp.token_logprobs) == len(hyp.tokens) + (1 if hyp.finished else 0)
    assert hyp.score == f64(sum(hyp.token_logprobs), scale=len(hyp.token_logprobs))  # float64 sums, any order
    assert hyp.normalized_score == f64(hyp.score / length_penalty(len(hyp), alpha))


def test_greedy_returns_the_same_fields_and_values_as_pytorch(model):
    ours = generate(model, TEXTS, max_length=30)
    theirs = generate(model, TEXTS, max_length=30, engine="ctranslate2")
    assert len(theirs) == len(TEXTS)
    for a, b in zip(ours, theirs):
        assert (b.source, b.source_ids, b.source_pieces, b.truncated) == (a.source, a.source_ids, a.source_pieces,
                                                                         a.truncated)
        assert len(b.hypotheses) == 1 and b.text == a.text
        x, y = a.best, b.best
        assert (y.tokens, y.finished, y.attention) == (x.tokens, x.finished, None)
        assert y.token_logprobs == runtime(x.token_logprobs)
        n = len(x.token_logprobs)
        assert y.score == score(x.score, n, RUNTIME_REL) and y.normalized_score == score(x.normalized_score, n, RUNTIME_REL)
        check_consistent(y, 0.6)
    assert theirs[1].best.tokens == [] and theirs[1].text == ""
    assert model.translate(TEXTS, max_length=30, engine="ctranslate2") == [r.text for r in ours]


def test_length_options_map_like_ours(model):
    for options in (dict(max_length=3), dict(min_len=5, max_length=12), dict(max_len_offset=2)):
        ours = generate(model, TEXTS, **options)
        theirs = generate(model, TEXTS, engine="ctranslate2", batch_size=2, **options)
        assert [(r.best.tokens, r.best.finished) for r in theirs] == [(r.best.tokens, r.best.finished) for r in ours]


def test_beam_n_best_is_ranked_by_gnmt_and_scored_per_token(model):
    theirs = generate(model, TEXTS, strategy="beam", beam_size=4, n_best=3, max_length=20, engine="ctranslate2")
    ours = generate(model, TEXTS, strategy="beam", beam_size=4, n_best=3, max_length=20)
    for r in theirs:
        assert 1 <= len(r.hypotheses) <= 3
        scores = [h.normalized_score for h in r.hypotheses]
        assert scores == sorted(scores, reverse=True)
        for h in r.hypotheses:
            check_consistent(h, 0.6)
    same = sum(a.best.tokens == b.best.tokens for a, b in zip(ours, theirs))
    assert same >= len(TEXTS) - 1


def test_sampling_gives_n_samples_with_the_models_own_logprobs(model):
    first = generate(model, TEXTS, strategy="sample", n_best=2, seed=7, temperature=5.0, max_length=15,
                     engine="ctranslate2")
    again = generate(model, TEXTS, strategy="sample", n_best=2, seed=7, temperature=5.0, max_length=15,
                     engine="ctranslate2")
    assert [[h.tokens for h in r.hypotheses] for r in first] == [[h.tokens for h in r.hypotheses] for r in again]
    for r in first:
        if r.source_ids:
            assert len(r.hypotheses) == 2
        for h in r.hypotheses:
            check_consistent(h, 0.6)
    # the log-probs are temperature 1's: rescoring a sample with the greedy path's model gives the same numbers
    hyp = first[0].best
    src = torch.tensor([first[0].source_ids])
    tgt = torch.tensor([[model.config.bos_id] + hyp.tokens])
    with torch.no_grad():
        logp = model(src, tgt).log_softmax(-1)[0]
    expected = logp[torch.arange(len(hyp.tokens)), torch.tensor(hyp.tokens)].tolist()
    assert hyp.token_logprobs[: len(hyp.tokens)] == runtime(expected)


@pytest.mark.parametrize("options, message", [
    (dict(return_attention=True), "attention"), (dict(workers=2), "workers=1"),
    (dict(engine="tensorrt"), "unknown engine"),
])
def test_options_it_cannot_honour_are_refused(model, options, message):
    options.setdefault("engine", "ctranslate2")
    with pytest.raises(ValueError, match=message):
        generate(model, TEXTS, **options)


def test_missing_package_says_how_to_install(model, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # `import ctranslate2` now raises ImportError
    assert not engine_available("ctranslate2") and engine_available("pytorch")
    with pytest.raises(MissingDependencyError, match=r"pip install ctranslate2"):
        generate(model, TEXTS, engine="ctranslate2")
    with pytest.raises(ImportError, match=r"transformer_hub\[fast\]"):
        CTranslate2Engine().prepare(model)
    model.save_pretrained(tmp_path / "model")
    status = cli.main(["translate", "--model", str(tmp_path / "model"), "--engine", "ctranslate2"])
    assert status == 2
    monkeypatch.setitem(sys.modules, "transformers", None)
    from transformer_hub.export import export_marian

    with pytest.raises(MissingDependencyError, match="pip install transformers"):
        export_marian(model, tmp_path / "m")


def test_conversion_is_cached_and_remade_when_weights_change(model, tmp_path):
    engine = CTranslate2Engine(cache_dir=tmp_path / "cache")
    before = generate(model, TEXTS, max_length=20, engine=engine)
    generate(model, TEXTS, max_length=20, engine=engine)
    assert engine.conversions == 1
    with torch.no_grad():  # an in-place update (an optimizer step would do the same)
        model.body.generator.weight.mul_(-1.0)
    after = generate(model, TEXTS, max_length=20, engine=engine)
    assert engine.conversions == 2
    assert [r.best.tokens for r in after] == [r.best.tokens for r in generate(model, TEXTS, max_length=20)]
    assert [r.best.tokens for r in after] != [r.best.tokens for r in before]
    other = random_model(seed=2, share_embeddings=True)  # equal weights, another object: the digest matches
    generate(other, TEXTS, max_length=20, engine=engine)
    assert engine.conversions == 2
    fresh = CTranslate2Engine(cache_dir=tmp_path / "cache")  # another process: reads the converted folder
    assert [r.best.tokens for r in generate(model, TEXTS, max_length=20, engine=fresh)] == \
        [r.best.tokens for r in after]
    assert fresh.conversions == 0
    model.load_state_dict(random_model(seed=5, share_embeddings=True).state_dict())
    generate(model, TEXTS, max_length=20, engine=engine)
    assert engine.conversions == 3


def test_engine_names_and_config_checks():
    assert get_engine("ctranslate2") is get_engine("ctranslate2")  # one default engine per process
    engine = CTranslate2Engine(compute_type="int8")
    assert get_engine(engine) is engine
    with pytest.raises(ValueError, match="compute_type"):
        CTranslate2Engine(compute_type="int3")
    engine.check(DecodingConfig(strategy="beam", beam_size=5, n_best=2, min_len=1))


def test_cli_translate_with_ctranslate2_engine(model, tmp_path, monkeypatch, capsys):
    import io

    model.save_pretrained(tmp_path / "model")
    lines = ["a dog runs in the park .", "", "the man"]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("\n".join(lines).encode()), encoding="utf-8"))
    status = cli.main(["translate", "--model", str(tmp_path / "model"), "--engine", "ctranslate2", "--max-length",
                       "10"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert out.split("\n")[:3] == [one_line(t) for t in model.translate(lines, max_length=10)]
    status = cli.main(["translate", "--model", str(tmp_path / "model"), "--engine", "ctranslate2", "--workers", "2"])
    assert status == 2 and "workers=1" in capsys.readouterr().err


@pytest.mark.parametrize("strategy", ["greedy", "beam"])
def test_a_forced_prefix_goes_to_target_prefix_and_equals_pytorch(model, strategy):
    texts = [t for t in TEXTS if t.strip()]
    prefixes = [model.tokenizer.decode(generate(model, [t], max_length=4)[0].best.tokens[:2]) + " " for t in texts]
    ours = generate(model, texts, strategy=strategy, prefix=prefixes, max_length=30)
    theirs = generate(model, texts, strategy=strategy, prefix=prefixes, max_length=30, engine="ctranslate2")
    for a, b, p in zip(ours, theirs, prefixes):
        forced = model.tokenizer.encode(p, side="target")
        assert b.best.tokens[: len(forced)] == forced
        if strategy == "greedy":  # the same search: the same tokens and scores, forced tokens counted
            assert b.best.tokens == a.best.tokens
            assert b.best.score == score(a.best.score, len(a.best.token_logprobs), RUNTIME_REL)
        check_consistent(b.best, 0.6)
    with pytest.raises(ValueError, match="the prefix of sentence 0 is"):
        generate(model, texts[:1], prefix="a b c d e f g h i j k l", max_length=2, engine="ctranslate2")
