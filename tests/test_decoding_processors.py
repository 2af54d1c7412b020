"""Logits processors (decoding/processors.py): each edit on hand-built log-probabilities, the state that follows the
rows, and the one wiring that greedy, sampling and beam search share."""
from __future__ import annotations

import pytest
import torch

from helpers.decoding_fixtures import pad_ids, random_model
from transformer_hub.decoding import DecodingConfig, decode_ids
from transformer_hub.decoding import beam as beam_module
from transformer_hub.decoding import strategies
from transformer_hub.decoding.constraints import Anchor, BeamAllocation, Constraints, Phrase
from transformer_hub.decoding.prefix import Forcing, Prefix
from transformer_hub.decoding.processors import AnchoredTerms, MinLength, Processor, Processors, Step, UnmetPhrases
from transformer_hub.decoding.stepper import Batch, processors_for

NEG_INF = float("-inf")
EOS = 2
CPU = torch.device("cpu")


def _step(t, sentences, attention=None):
    return Step(t, lambda: list(sentences), attention)


def test_min_length_blocks_only_eos_and_only_before_it():
    log_probs = torch.log_softmax(torch.arange(12.0).view(2, 6), dim=-1)
    before = log_probs.clone()
    MinLength(EOS, 3)(log_probs, _step(2, [0, 1]))
    assert log_probs[:, EOS].tolist() == [NEG_INF, NEG_INF]
    keep = [i for i in range(6) if i != EOS]
    assert torch.equal(log_probs[:, keep], before[:, keep])  # the others keep the model's log-probabilities
    log_probs = before.clone()
    MinLength(EOS, 3)(log_probs, _step(3, [0, 1]))
    assert torch.equal(log_probs, before)


def test_forcing_forces_then_spells_and_its_text_follows_the_rows():
    pieces = ["", "", "", "\u2581H", "u", "\u2581Hund", "\u2581Haus", "x"]
    prefixes = [Prefix(forced=[7], partial="\u2581Hu", pieces=pieces, length=2), None]
    forcing = Forcing(prefixes, CPU, per_sentence=2)  # two rows per sentence, as beam search's k=2
    assert forcing.remaining == ["\u2581Hu", "\u2581Hu", "", ""]
    log_probs = torch.full((4, 8), -2.0)
    forcing(log_probs, _step(0, [0, 0, 1, 1]))
    assert log_probs[0].tolist() == [NEG_INF] * 7 + [-2.0]  # the forced token only, at its own log-probability
    assert log_probs[2:].eq(-2.0).all()  # a sentence without a prefix is not touched
    forcing.follow([1, 0, 2, 3], [7, 7, 4, 4], _step(0, [0, 0, 1, 1]))  # the forced step spells nothing
    assert forcing.remaining == ["\u2581Hu", "\u2581Hu", "", ""]
    log_probs = torch.full((4, 8), -2.0)
    forcing(log_probs, _step(1, [0, 0, 1, 1]))
    allowed = [i for i in range(8) if log_probs[0, i] > NEG_INF]
    assert allowed == [3, 5]  # "▁H" (the text goes on with "u") and "▁Hund" (it completes the word)
    forcing.follow([1, 0, 2, 3], [3, 5, 4, 4], _step(1, [0, 0, 1, 1]))
    assert forcing.remaining == ["u", "", "", ""]
    forcing.follow([1, 2], None, _step(1, [0, 1]))  # rows only kept (greedy dropping the ended ones)
    assert forcing.remaining == ["", ""]


def _allocation(anchors=None):
    spec = Constraints([Phrase("ab", ((5, 6),), "x")], anchors)
    return BeamAllocation([spec, None], k=1, device=CPU)


def test_unmet_phrases_keep_a_row_from_ending_until_it_met_them():
    allocation = _allocation()
    unmet = UnmetPhrases(allocation, EOS)
    log_probs = torch.zeros(2, 8)
    unmet(log_probs, _step(0, [0, 1]))
    assert log_probs[:, EOS].tolist() == [NEG_INF, 0.0]  # the sentence without phrases may end
    unmet.follow([0, 1], [5, 4], _step(0, [0, 1]))
    unmet.follow([0, 1], [6, 4], _step(1, [0, 1]))
    log_probs = torch.zeros(2, 8)
    unmet(log_probs, _step(2, [0, 1]))
    assert log_probs[:, EOS].tolist() == [0.0, 0.0] and allocation.states[0][0] == 1


def test_anchored_terms_read_the_attention_and_close_the_term_elsewhere():
    allocation = _allocation([Anchor((1, 2), frozenset({3}))])
    att = torch.zeros(2, 1, 1, 3)
    att[0, 0, 0, 0] = 1.0  # sentence 0's row attends away from the term's word
    log_probs = torch.full((2, 8), -1.0)
    AnchoredTerms(allocation)(log_probs, _step(0, [0, 1], att))
    assert allocation.closed == {0: 1} and log_probs.eq(-1.0).all()
    att[0, 0, 0, 0], att[0, 0, 0, 1] = 0.0, 1.0  # now at it: the usual word loses the penalty (4 nats)
    AnchoredTerms(allocation)(log_probs, _step(1, [0, 1], att))
    assert allocation.closed == {0: 0} and log_probs[0, 3].item() == -5.0 and log_probs[1].eq(-1.0).all()


def test_a_batch_gets_its_processors_in_one_order():
    src = torch.tensor([[4, EOS], [5, EOS]])
    batch = Batch(src, torch.tensor([2, 2]), torch.tensor([5, 5]), prefixes=[Prefix.from_ids([6]), None])
    found = processors_for(batch, DecodingConfig(min_len=2), EOS, 1)
    assert [type(p) for p in found] == [Forcing, MinLength] and not found.needs_attention
    assert processors_for(Batch(src, batch.lengths, batch.max_steps), DecodingConfig(), EOS, 1) == []
    anchored = _allocation([Anchor((0, 1))])
    found = processors_for(batch, DecodingConfig(strategy="beam"), EOS, 1, anchored)
    assert [type(p) for p in found] == [Forcing, AnchoredTerms, UnmetPhrases] and found.needs_attention
    assert [type(p) for p in processors_for(batch, DecodingConfig(), EOS, 1, _allocation())] == [Forcing, UnmetPhrases]


class _Seen(Processor):
    """Records what every step shows it and pushes token 7 up (an edit every strategy must honour)."""

    def __init__(self):
        self.steps, self.moves = [], 0

    def __call__(self, log_probs, step):
        self.steps.append((step.t, log_probs.size(0), step.sentences))
        log_probs[:, 7] = 0.0

    def follow(self, rows, tokens, step):
        self.moves += 1


@pytest.mark.parametrize("options", [dict(strategy="greedy"), dict(strategy="sample", n_best=2, seed=1),
                                     dict(strategy="beam", beam_size=3)])
def test_every_strategy_runs_its_processors_through_one_wiring(options, monkeypatch):
    seen = _Seen()

    def with_seen(*args, **kwargs):
        return Processors([seen])

    for module in (strategies, beam_module):
        monkeypatch.setattr(module, "processors_for", with_seen)
    model = random_model(seed=2, eos_boost=0.0)
    src = pad_ids([[4, 5, 6, EOS], [8, EOS]])
    out = decode_ids(model, src, max_length=4, top_k=1, **options)
    assert seen.steps and seen.moves >= len(seen.steps) - 1
    assert [t for t, _, _ in seen.steps] == list(range(len(seen.steps)))
    assert all(set(sentences) <= {0, 1} and len(sentences) == rows for _, rows, sentences in seen.steps)
    # token 7 made certain: every hypothesis writes it at every step (eos could never win)
    assert all(h.tokens == [7] * 4 for hyps in out for h in hyps)
