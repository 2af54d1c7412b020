"""Forced prefixes, per-token alternatives and the beam search trace."""
import json

import pytest
import torch

from helpers.decoding_fixtures import one_thread, pad_ids, random_model
from helpers.tolerances import f32, score, sum_close
from transformer_hub.decoding import DecodingConfig, decode_ids, generate
from transformer_hub.decoding.prefix import WORD_START, Prefix

TEXTS = ["a dog runs in the park .", "two people sit on a red bench with a ball .", "the child plays ."]
LAYOUTS = ["encoder-decoder", "decoder-only"]
DECODERS = [("greedy", {}), ("beam", {"beam_size": 3, "n_best": 2})]


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


def model_for(layout, **overrides):
    return random_model(layout=layout, eos_boost=2.0, **overrides)


def teacher_forced(model, result, hyp):
    """Per output step (eos included when finished): the model's log-probabilities over the vocabulary."""
    cfg = model.config
    out = hyp.tokens + ([cfg.eos_id] if hyp.finished else [])
    with torch.inference_mode():
        logits = model(torch.tensor([result.source_ids]), torch.tensor([[cfg.bos_id] + out[:-1]]))
    return out, logits[0].log_softmax(-1)


# --------------------------------------------------------------------------- prefix
@pytest.mark.parametrize("use_cache", [True, False])
@pytest.mark.parametrize("strategy,opts", DECODERS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_forced_prefix_starts_the_output_and_counts_in_the_score(layout, strategy, opts, use_cache):
    model = model_for(layout)
    tok = model.tokenizer
    prefixes = ["ein hund ", "zwei leute sitzen ", "der "]
    results = generate(model, TEXTS, strategy=strategy, prefix=prefixes, max_len_offset=6, use_cache=use_cache, **opts)
    for result, prefix in zip(results, prefixes):
        forced = tok.encode(prefix, side="target")
        for hyp in result.hypotheses:
            assert hyp.tokens[:len(forced)] == forced
            assert hyp.text.startswith(prefix.strip())
            out, log_probs = teacher_forced(model, result, hyp)
            expected = log_probs.gather(1, torch.tensor(out)[:, None]).squeeze(1)
            assert hyp.token_logprobs == f32(expected.tolist())
            assert hyp.score == score(float(expected.double().sum()), len(expected))


@pytest.mark.parametrize("strategy,opts", DECODERS + [("sample", {"seed": 3, "n_best": 2})])
def test_an_empty_prefix_is_plain_decoding(strategy, opts):
    model = model_for("encoder-decoder")
    plain = generate(model, TEXTS, strategy=strategy, max_len_offset=6, **opts)
    for prefix in ("", ["", "  ", None]):
        got = generate(model, TEXTS, strategy=strategy, max_len_offset=6, prefix=prefix, **opts)
        for a, b in zip(plain, got):
            assert [h.tokens for h in a.hypotheses] == [h.tokens for h in b.hypotheses]
            assert [h.score for h in a.hypotheses] == [h.score for h in b.hypotheses]


def test_a_prefix_longer_than_the_length_cap_is_a_clear_error():
    model = model_for("encoder-decoder")
    with pytest.raises(ValueError, match="prefix of sentence 1 is .* tokens, more than the 3 output tokens"):
        generate(model, TEXTS[:2], prefix=["ein", "zwei leute sitzen auf der bank"], max_length=3)
    with pytest.raises(ValueError, match="2 entries for 3 sentences"):
        generate(model, TEXTS, prefix=["a", "b"])
    with pytest.raises(ValueError, match="prefix ids must be target tokens"):
        decode_ids(model, pad_ids([[5, 2]]), prefix=[[model.config.eos_id]])


@pytest.mark.parametrize("strategy,opts", DECODERS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_prefix_ending_inside_a_word_is_completed(layout, strategy, opts):
    model = model_for(layout)
    tok = model.tokenizer
    cfg = model.config
    prefix = Prefix.from_text(tok, "ein hu", [cfg.pad_id, cfg.bos_id, cfg.eos_id, cfg.unk_id])
    assert prefix.forced == tok.encode("ein", side="target") and prefix.partial == WORD_START + "hu"
    (result,) = generate(model, ["a dog runs ."], strategy=strategy, prefix="ein hu", max_len_offset=6, **opts)
    for hyp in result.hypotheses:
        assert hyp.text.startswith("ein hu")
        out, log_probs = teacher_forced(model, result, hyp)
        assert hyp.score == score(float(log_probs.gather(1, torch.tensor(out)[:, None]).double().sum()), len(out))


def test_prefixes_are_per_sentence_and_do_not_depend_on_the_batch():
    model = model_for("encoder-decoder")
    prefixes = ["ein hund ", None, "der k"]
    opts = dict(strategy="beam", beam_size=3, max_len_offset=6)
    together = generate(model, TEXTS, prefix=prefixes, **opts)
    alone = [generate(model, [t], prefix=[p], **opts)[0] for t, p in zip(TEXTS, prefixes)]
    assert [r.best.tokens for r in together] == [r.best.tokens for r in alone]
    for a, b in zip(together, alone):
        assert a.best.score == score(b.best.score, len(b.best.token_logprobs))
    ids = pad_ids([r.source_ids for r in together])
    forced = model.tokenizer.encode("ein hund", side="target")
    by_ids = decode_ids(model, ids, prefix=[forced, None, None], **opts)
    assert by_ids[0][0].tokens == together[0].best.tokens


# --------------------------------------------------------------------------- alternatives
@pytest.mark.parametrize("use_cache", [True, False])
@pytest.mark.parametrize("strategy,opts", DECODERS + [("sample", {"seed": 1})])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_alternatives_are_the_models_distribution_at_each_step(layout, strategy, opts, use_cache):
    model = model_for(layout)
    K = 5
    results = generate(model, TEXTS, strategy=strategy, return_alternatives=K, prefix=[None, "zwei ", None],
                       max_len_offset=5, use_cache=use_cache, **opts)
    for result in results:
        for hyp in result.hypotheses:
            assert len(hyp.alternatives) == len(hyp.token_logprobs)
            out, log_probs = teacher_forced(model, result, hyp)
            probs = log_probs.exp()
            for step, (alts, token, token_lp) in enumerate(zip(hyp.alternatives, out, hyp.token_logprobs)):
                ids = [i for i, _ in alts]
                values = [p for _, p in alts]
                assert K <= len(alts) <= K + 1 and len(set(ids)) == len(ids)
                assert values == sorted(values, reverse=True)
                assert values == f32(probs[step, ids].tolist())
                assert dict(alts)[token] == f32(torch.tensor(token_lp).exp().item())
                top = torch.topk(probs[step], K).values
                assert sorted(values, reverse=True)[K - 1] == f32(float(top[-1]))
    pieces = results[0].best.alternative_pieces(model.tokenizer)
    assert [p for p, _ in pieces[0]] == model.tokenizer.pieces([i for i, _ in results[0].best.alternatives[0]])


def test_alternatives_are_bounded_by_the_vocabulary_and_validated():
    model = model_for("encoder-decoder")
    V = model.config.tgt_vocab_size
    (result,) = generate(model, ["a dog ."], return_alternatives=V + 50, max_len_offset=2)
    assert all(len(alts) == V for alts in result.best.alternatives)
    assert sum_close(torch.tensor(sum(p for _, p in result.best.alternatives[0])), torch.tensor(1.0), terms=V)
    assert generate(model, ["a dog ."], max_len_offset=2)[0].best.alternatives is None
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="return_alternatives"):
            DecodingConfig(return_alternatives=bad)


# --------------------------------------------------------------------------- search trace
@pytest.mark.parametrize("use_cache", [True, False])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_search_trace_is_a_tree_holding_the_returned_hypotheses(layout, use_cache):
    model = model_for(layout)
    k, eos = 3, model.config.eos_id
    results = generate(model, TEXTS, strategy="beam", beam_size=k, n_best=3, return_search=True,
                       max_len_offset=6, use_cache=use_cache, prefix=[None, None, "der "])
    for result in results:
        trace = result.search
        assert trace is not None and trace.steps
        for t, step in enumerate(trace.steps):
            assert len(step.beams) <= k
            for node in step.beams + step.finished + step.pruned:
                assert len(node.tokens) == t + 1
                if t == 0:
                    assert node.parent == -1
                else:
                    assert trace.steps[t - 1].beams[node.parent].tokens == node.tokens[:-1]
        for hyp in result.hypotheses:
            where = trace.locate(hyp, eos)
            assert where is not None  # every returned hypothesis is a finished node
            step, index = where
            path = trace.path(step, trace.steps[step].finished[index])
            assert [n.token for n in path] == hyp.tokens + ([eos] if hyp.finished else [])
            assert path[-1].score == score(hyp.score, len(hyp.token_logprobs))
        json.dumps(trace.to_dict())  # plain data for the Space
    forced = model.tokenizer.encode("der", side="target")
    assert [len(s.beams) for s in results[2].search.steps[:len(forced)]] == [1] * len(forced)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_beam_one_search_tree_is_greedys_path(layout):
    model = model_for(layout)
    greedy = generate(model, TEXTS, max_len_offset=6)
    beam = generate(model, TEXTS, strategy="beam", beam_size=1, return_search=True, max_len_offset=6)
    for g, b in zip(greedy, beam):
        steps = b.search.steps
        assert all(len(s.beams) + len(s.finished) == 1 for s in steps)
        assert [len(s.beams) for s in steps[:-1]] == [1] * (len(steps) - 1) and steps[-1].finished
        assert [n.token for n in b.search.path(len(steps) - 1, steps[-1].finished[0])] == \
            g.best.tokens + ([model.config.eos_id] if g.best.finished else [])


def test_return_search_needs_beam_and_is_off_by_default():
    model = model_for("encoder-decoder")
    assert generate(model, ["a dog ."], strategy="beam", max_len_offset=2)[0].search is None
    with pytest.raises(ValueError, match="return_search"):
        DecodingConfig(strategy="greedy", return_search=True)
    hyps = decode_ids(model, pad_ids([[5, 6, 2]]), strategy="beam", beam_size=2, return_search=True, max_length=3)
    assert hyps[0].search is not None and hyps[0].search.steps
