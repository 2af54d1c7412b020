"""Beam search's units: the finished-hypotheses object, the early-stopping rules against exhaustive search,
and decoding that does not depend on the batch (hand-made models whose hidden states are exact)."""
import itertools
import math
import threading
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from helpers.decoding_fixtures import one_thread, pad_ids, random_model
from helpers.tolerances import score
from transformer_hub.decoding import DecodingConfig, Hypothesis, decode_ids, generate, length_penalty
from transformer_hub.decoding.hypotheses import FinishedHypotheses
from transformer_hub.model import DecoderOutput
from transformer_hub.model.cache import EncoderState, KVCache

BOS, EOS, PAD = 1, 2, 0
A, B = 3, 4  # the hand-made vocabulary: pad, bos, eos, a, b


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


def hyp(normalized: float, tokens=(5,)) -> Hypothesis:
    return Hypothesis(text="", tokens=list(tokens), token_logprobs=[normalized], score=normalized,
                      normalized_score=normalized)


# --------------------------------------------------------------------------- FinishedHypotheses
def test_finished_hypotheses_keep_the_k_best_first_added_first_on_ties():
    kept = FinishedHypotheses(k=3, alpha=0.0, early_stopping=False, cap=10)
    assert kept.worst == -math.inf and kept.best(3) == []
    first_tie = hyp(-2.0, (7,))
    for h, stays in [(hyp(-5.0), True), (first_tie, True), (hyp(-1.0), True), (hyp(-9.0), False),
                     (hyp(-2.0, (8,)), True), (hyp(-2.0, (9,)), False)]:
        assert kept.add(h) is stays
    assert len(kept) == 3 and kept.worst == -2.0
    best = kept.best(3)
    assert [h.normalized_score for h in best] == [-1.0, -2.0, -2.0]
    assert best[1] is first_tie and best[2].tokens == [8]  # equal scores: the earlier one ranks first
    assert [h.normalized_score for h in kept.best(1)] == [-1.0]


@pytest.mark.parametrize("mode", [True, False, "never"])
def test_finished_hypotheses_stopping_rules(mode):
    alpha, cap = 1.0, 10
    kept = FinishedHypotheses(k=2, alpha=alpha, early_stopping=mode, cap=cap)
    kept.add(hyp(-1.0))
    assert not kept.is_done(-100.0, 3)  # fewer than k finished: never done
    kept.add(hyp(-2.0))  # the k-th best is now -2.0
    live = -2.0 * length_penalty(3, alpha) - 0.1  # at its current length it cannot beat -2.0 ...
    assert live / length_penalty(cap, alpha) > -2.0  # ... at the cap it could
    expected = {True: True, False: True, "never": False}[mode]
    assert kept.is_done(live, 3) is expected
    hopeless = -2.0 * length_penalty(cap, alpha) - 0.1  # cannot beat it even at the cap
    assert kept.is_done(hopeless, 3) is True
    assert kept.is_done(-0.1, 3) is (mode is True)  # a live beam ahead: only True stops
    assert kept.is_done(-math.inf, 3) is True


def test_early_stopping_is_validated():
    assert DecodingConfig().early_stopping is False
    for good in (True, False, "never"):
        DecodingConfig(strategy="beam", early_stopping=good)
    for bad in ("always", 1, None):
        with pytest.raises(ValueError, match="early_stopping"):
            DecodingConfig(strategy="beam", early_stopping=bad)


# --------------------------------------------------------------------------- a hand-made model
class TableModel(nn.Module):
    """Next-token log-probabilities looked up by the output so far (unknown prefixes: eos).

    It implements the decoding interface (``encode``, ``decode`` with a ``KVCache``, ``new_cache``,
    ``target_budget``); the cache holds the tokens so far, so beam search's reordering is exercised.
    """

    def __init__(self, table, vocab: int = 5, max_len: int = 32) -> None:
        super().__init__()
        self.config = SimpleNamespace(bos_id=BOS, eos_id=EOS, pad_id=PAD, max_len=max_len, src_vocab_size=8,
                                      tgt_vocab_size=vocab, layout="table")
        self.table, self.vocab, self.tokenizer = table, vocab, None

    def encode(self, src):
        return EncoderState(src, src != PAD)

    def new_cache(self):
        return KVCache.empty(1)

    def target_budget(self, state):
        return self.config.max_len

    def log_probs(self, prefix):
        row = torch.full((self.vocab,), -math.inf)
        for token, lp in self.table.get(tuple(prefix), {EOS: 0.0}).items():
            row[token] = lp
        return row

    def decode(self, tgt, state, cache=None, need_weights=False):
        if cache is not None:
            seen, _ = cache.layers[0]["self"].append(tgt[:, None, :, None].float(), tgt[:, None, :, None].float())
            cache.length += tgt.size(1)
            tgt = seen[:, 0, :, 0].long()
        rows = [self.log_probs(seq[1:]) for seq in tgt.tolist()]  # after bos
        hidden = torch.stack(rows)[:, None, :].expand(-1, tgt.size(1), -1)
        return DecoderOutput(hidden, nn.Identity())


def lp(p):
    return math.log(p)


# alpha = 2: "a <eos>" and "<eos>" finish early; "b b" looks worse at length 2, but "b b b <eos>" is best
TRAP = {
    (): {A: lp(0.41), EOS: lp(0.37), B: lp(0.22)},
    (A,): {EOS: lp(0.95), A: lp(0.05)},
    (A, A): {EOS: 0.0},
    (B,): {B: lp(0.999), EOS: lp(0.001)},
    (B, B): {B: lp(0.999), EOS: lp(0.001)},
    (B, B, B): {EOS: lp(0.999), B: lp(0.001)},
}


def exhaustive(table, cap, alpha):
    """Every output (eos-terminated, or cut at the cap) with its normalised score, best first."""
    model, out = TableModel(table), []
    for n in range(1, cap + 1):
        for seq in itertools.product([EOS, A, B], repeat=n):
            if EOS in seq[:-1]:
                continue
            if seq[-1] != EOS and n < cap:
                continue
            score = sum(float(model.log_probs(list(seq[:i]))[tok]) for i, tok in enumerate(seq))
            if score > -math.inf:
                out.append((score / length_penalty(n, alpha), list(seq)))
    return sorted(out, reverse=True)


def output(h):
    return h.tokens + ([EOS] if h.finished else [])


@pytest.mark.parametrize("use_cache", [True, False])
def test_heuristic_stop_fires_and_never_finds_the_optimum(use_cache):
    cap, alpha, k = 4, 2.0, 2
    model = TableModel(TRAP)
    src = pad_ids([[5, EOS]])
    best_score, best = exhaustive(TRAP, cap, alpha)[0]
    assert best == [B, B, B, EOS]
    opts = dict(strategy="beam", beam_size=k, n_best=k, max_length=cap, length_penalty=alpha, use_cache=use_cache)
    (heuristic,) = decode_ids(model, src, early_stopping=False, **opts)
    (never,) = decode_ids(model, src, early_stopping="never", **opts)
    (eager,) = decode_ids(model, src, early_stopping=True, **opts)
    # the heuristic stopped at length 2 with "a <eos>" and "<eos>": "b b" scored worse *at its length*
    assert [output(h) for h in heuristic] == [[A, EOS], [EOS]]
    assert heuristic[0].normalized_score < best_score - 0.01
    assert output(never[0]) == best and never[0].normalized_score == score(best_score, len(best))
    assert [output(h) for h in eager] == [[A, EOS], [EOS]]  # True: stopped at the first k finished


def test_never_is_exact_search_with_a_beam_that_prunes_nothing():
    torch.manual_seed(0)
    table = {}
    for n in range(4):  # every prefix over {a, b} of length < 4: random distributions over eos, a, b
        for prefix in itertools.product([A, B], repeat=n):
            logits = torch.randn(3) * 2
            table[prefix] = dict(zip([EOS, A, B], logits.log_softmax(-1).tolist()))
    cap, alpha = 4, 1.5
    ranked = exhaustive(table, cap, alpha)
    (found,) = decode_ids(TableModel(table), pad_ids([[5, EOS]]), strategy="beam", beam_size=16, n_best=5,
                          max_length=cap, length_penalty=alpha, early_stopping="never")
    assert [output(h) for h in found] == [seq for _, seq in ranked[:5]]
    for h, (expected, seq) in zip(found, ranked[:5]):
        assert h.normalized_score == score(expected, len(seq))


# --------------------------------------------------------------------------- batch independence
class NearTieModel(TableModel):
    """Hidden states looked up per prefix (exact in any batch), projected by a real output layer whose
    rows come in near-identical pairs: the logits of a pair differ in their last bits, so a projection
    kernel that sums in another order for another row count would flip the argmax."""

    def __init__(self, d_model=64, vocab=600, seed=0):
        super().__init__({}, vocab=vocab)
        g = torch.Generator().manual_seed(seed)
        base = torch.randn(vocab // 2, d_model, generator=g)
        weight = torch.cat([base, base * (1 + 1e-7 * torch.randn(vocab // 2, d_model, generator=g))])
        self.generator = nn.Linear(d_model, vocab, bias=False)
        with torch.no_grad():
            self.generator.weight.copy_(weight)
        self.d_model, self.seed = d_model, seed

    def hidden_of(self, src, prefix):
        g = torch.Generator().manual_seed(hash((self.seed, tuple(src), tuple(prefix))) % 2 ** 31)
        return torch.randn(self.d_model, generator=g) * 3

    def decode(self, tgt, state, cache=None, need_weights=False):
        if cache is not None:
            seen, _ = cache.layers[0]["self"].append(tgt[:, None, :, None].float(), tgt[:, None, :, None].float())
            cache.length += tgt.size(1)
            tgt = seen[:, 0, :, 0].long()
        src = state.ungrouped().src.tolist()
        rows = [self.hidden_of([i for i in s if i != PAD], seq[1:]) for s, seq in zip(src, tgt.tolist())]
        return DecoderOutput(torch.stack(rows)[:, None, :], self.generator)


@pytest.mark.parametrize("strategy", ["greedy", "beam"])
def test_a_sentence_decodes_identically_alone_and_in_any_batch(strategy):
    model = NearTieModel()
    rows = [[5 + (i * 7 + j) % 3 for j in range(1 + i % 5)] + [EOS] for i in range(40)]
    opts = dict(strategy=strategy, max_length=6, beam_size=4)
    together = decode_ids(model, pad_ids(rows), **opts)
    alone = [decode_ids(model, pad_ids([r]), **opts)[0] for r in rows]
    for a, b in zip(alone, together):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == [h.score for h in b]  # bit for bit
        assert [h.token_logprobs for h in a] == [h.token_logprobs for h in b]


# --------------------------------------------------------------------------- decoding leaves module flags alone
def test_decoding_never_touches_training_flags_while_another_thread_trains():
    """Decoding a model in training mode: dropout is off for the decode (same output as eval mode), while
    another thread running the same dropout module in the middle of the decode still drops out."""
    model = random_model(dropout=0.5)
    texts = ["a dog runs .", "two people sit on a bench ."]
    reference = generate(model, texts, strategy="beam", beam_size=3, max_len_offset=5)
    model.train()
    dropout = next(m for m in model.modules() if type(m).__name__ == "Dropout")
    seen = []

    def during_decode(module, args):
        if seen:
            return
        seen.append(module.training)
        other = {}
        worker = threading.Thread(target=lambda: other.update(out=module(torch.ones(2000))))
        worker.start()
        worker.join()
        seen.append(bool((other["out"] == 0).any()))

    handle = dropout.register_forward_pre_hook(during_decode)
    try:
        got = generate(model, texts, strategy="beam", beam_size=3, max_len_offset=5)
    finally:
        handle.remove()
    assert seen == [True, True]  # the flag stayed on, and the other thread's dropout dropped
    assert [r.best.tokens for r in got] == [r.best.tokens for r in reference]
    assert [r.best.score for r in got] == [r.best.score for r in reference]
    assert all(m.training for m in model.modules())


def test_torch_dropout_in_training_mode_is_refused_with_a_clear_message():
    model = random_model()
    model.body.extra = nn.Dropout(0.1)  # a plugin part that no_dropout cannot switch off
    model.body.extra.train()
    with pytest.raises(ValueError, match="body.extra .*training mode.*model.eval"):
        generate(model, ["a dog ."])
    model.eval()
    assert len(generate(model, ["a dog ."], max_len_offset=2)) == 1
