"""Batches sized by tokens as well as sentences: a batch's memory (the decoder's cached keys and values: its rows
times the padded source and the longest output cap) is bounded whatever its sentences' lengths."""
from __future__ import annotations

from helpers.decoding_fixtures import random_model
from transformer_hub.decoding import generate
from transformer_hub.decoding.batching import BATCH_TOKENS, plan_batches


def _tokens(batch, sources, caps, rows_each):
    return len(batch) * rows_each * (max(len(sources[i]) for i in batch) + max(caps[i] for i in batch))


def test_long_sentences_at_beam_4_go_in_batches_within_the_token_budget():
    model = random_model()  # max_len 64: caps within it
    sources = [[7] * 40 + [2]] * 40 + [[7] * 8 + [2]] * 40 + [[]]
    caps = [60] * 40 + [20] * 40 + [50]
    batches = plan_batches(model, sources, caps, size=128, rows_each=4, max_tokens=2000)
    assert sorted(i for batch in batches for i in batch) == list(range(80))  # the empty source is not decoded
    assert all(_tokens(b, sources, caps, 4) <= 2000 for b in batches), [len(b) for b in batches]
    # long sentences: 4 x (41 + 60) = 404 tokens each, 4 a batch; short ones 4 x (9 + 20) = 116, 17 a batch
    assert [len(b) for b in batches] == [4] * 10 + [17, 17, 6]
    # greedy: 101 tokens a long one, 19 a batch, the third with 17 short ones padded to the long source and cap
    assert [len(b) for b in plan_batches(model, sources, caps, size=128, max_tokens=2000)] == [19, 19, 19, 23]
    assert [len(b) for b in plan_batches(model, sources, caps, size=128, max_tokens=10 ** 9)] == [80]
    assert BATCH_TOKENS >= 4 * 64 * 16  # the default: at least 16 sentences at beam 4 and the longest cap


def test_a_sentence_over_the_budget_alone_is_still_decoded_and_results_do_not_depend_on_the_batches():
    """The budget only cuts batches: a sentence over it is a batch of its own, and batches change no output."""
    model = random_model()
    sources = [[7] * 30 + [2], [7] * 3 + [2]]
    assert plan_batches(model, sources, [80, 53], size=8, rows_each=4, max_tokens=10) == [[0], [1]]
    texts = ["a dog runs in the park with a ball .", "the man", "two people sit on a bench near the river ."]
    whole = generate(model, texts, strategy="beam", beam_size=4, max_length=6)
    alone = generate(model, texts, strategy="beam", beam_size=4, max_length=6, batch_size=1)
    assert [r.best.tokens for r in alone] == [r.best.tokens for r in whole]
