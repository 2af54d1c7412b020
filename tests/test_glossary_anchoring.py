"""Glossary terms anchored to their source words (decoding/alignment.py, anchoring.py, BeamAllocation.anchor): the
units on tensors and a tiny model, and the example that garbled on the shipped en-de model, through the library
and through the Space's POST /translate."""
from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
import torch

from helpers.decoding_fixtures import random_model
from transformer_hub.decoding import DecodingConfig, generate
from transformer_hub.decoding.alignment import (focus, head_words, inner_tokens, source_spans,
                                                usual_translation, words_of, writes_word)
from transformer_hub.decoding.anchoring import anchor_for, decode_anchored, term_spans
from transformer_hub.decoding.constraints import Anchor, Anchoring, BeamAllocation, Constraints, Phrase, Term
from transformer_hub.decoding.processors import AnchoredTerms, Step
from transformer_hub.decoding.results import Hypothesis
from transformer_hub.text import translate_texts

ROOT = Path(__file__).resolve().parents[1]
EN_DE = ROOT / "space" / "models" / "en-de"
SENTENCE = "A man rides a bicycle down the street."
TERMS = {"bicycle": "Velo", "street": "Gasse"}


def test_source_spans_find_a_terms_pieces_case_insensitively_on_word_boundaries():
    pieces = ["▁A", "▁red", "▁bi", "cycle", "▁and", "▁a", "▁bicycles", ".", "</s>"]
    assert source_spans(pieces, "Bicycle") == [(2, 4)]
    assert source_spans(pieces, "red  bicycle") == [(1, 4)]  # any whitespace between a term's words
    assert source_spans(pieces, "cycle") == []  # inside a word: not the term
    assert source_spans(pieces, "car") == []


def test_focus_averages_the_heads_of_every_layer_but_the_first():
    att = torch.zeros(2, 3, 2, 4)  # (rows, layers, heads, source)
    att[:, 0, :, 0] = 1.0  # the first layer looks elsewhere: left out
    att[:, 1:, 0, 1] = 1.0
    att[:, 1:, 1, 2] = 1.0
    assert focus(att).tolist() == [[0.0, 0.5, 0.5, 0.0]] * 2
    assert focus(att[:, :1]).tolist() == [[1.0, 0.0, 0.0, 0.0]] * 2  # one layer: that one


def test_usual_translation_is_the_words_written_while_attending_to_the_span():
    pieces = ["▁Ein", "▁Fahr", "rad", "▁fährt", "."]
    att = torch.zeros(2, 1, 5, 3)  # (layers, heads, target, source): source 1 is the term
    for t, share in enumerate([0.1, 0.3, 0.9, 0.45, 0.6]):
        att[:, 0, t, 1], att[:, 0, t, 0] = share, 1 - share
    assert words_of(pieces) == [(0, 1), (1, 3), (3, 4), (4, 5)]
    # "Fahrrad" (its best piece 0.9); "fährt" is under the 0.5 share, "." has no letter
    assert usual_translation(att, pieces, (1, 2)) == [(1, 3)]
    att[:, 0, 3, 1] = 0.8  # now "fährt" is close to the best word: it counts too
    assert usual_translation(att, pieces, (1, 2)) == [(1, 3), (3, 4)]


def test_punctuation_is_a_word_of_its_own_and_byte_pieces_stay_in_their_word():
    assert words_of(["▁Ein", "▁V", "e", "lo", "-", "Fahrer", ",", "▁der", "▁\"", "H", "al", "lo", "\"", "."]) == [
        (0, 1), (1, 4), (4, 5), (5, 6), (6, 7), (7, 8), (8, 9), (9, 12), (12, 13), (13, 14)]
    assert words_of(["▁L", "'", "homme", "▁fait"]) == [(0, 1), (1, 2), (2, 3), (3, 4)]  # "homme" starts its word
    assert words_of(["▁Caf", "<0xC3>", "<0xA9>", "s", "▁", "<0xC3>", "<0x86>", "r"]) == [(0, 4), (4, 8)]
    att = torch.zeros(1, 1, 3, 2)
    att[0, 0, :, 1] = 1.0  # every piece on the term: the emoji's bytes still are no word with a letter
    assert usual_translation(att, ["▁", "<0xF0>", "<0x9F>"], (1, 2)) == []
    assert usual_translation(att, ["▁", "<0xC3>", "r"], (1, 2)) == [(0, 3)]


def test_the_usual_words_replaced_are_the_last_of_each_run_not_the_article_before_them():
    pieces = ["▁à", "▁travers", "▁des", "▁poissons", "▁sur", "▁l", "'", "herbe", "▁et", "▁des", "▁poissons"]
    words = [(2, 3), (3, 4), (5, 6), (7, 8), (9, 10)]  # "des" "poissons" "l" "herbe" "des"
    assert head_words(words, pieces) == [(3, 4), (7, 8), (9, 10)]  # the last "des" is followed by no usual word
    assert head_words([], pieces) == []


def test_inner_tokens_are_the_pieces_that_continue_a_word():
    assert inner_tokens(["<pad>", "▁Ve", "lo", "s", ".", "▁", "9"]).tolist() == [2, 3, 6]


def _anchor(allocation, log_probs, attention, sentences):
    AnchoredTerms(allocation)(log_probs, Step(0, lambda: sentences, attention))


def _spec(anchors):
    return Constraints([Phrase("ab", ((5, 6),), "x"), Phrase("c", ((7,),))], anchors)


def test_the_gate_closes_a_term_where_the_decoder_looks_elsewhere_and_the_usual_words_are_pushed_down():
    spec = _spec([Anchor((1, 2), frozenset({3, 5})), None])
    assert spec.avoid == {3}  # a term's own tokens are never pushed down
    allocation = BeamAllocation([spec], k=2, device=torch.device("cpu"))
    log_probs = torch.full((2, 10), -2.0)
    log_probs[:, 3] = -0.5  # the usual translation's token, the rows' favourite
    att = torch.zeros(2, 2, 1, 3)
    att[0, 1, 0, 1], att[0, 1, 0, 0] = 0.6, 0.4  # row 0 attends to the term's word
    att[1, 1, 0, 0] = 1.0  # row 1 does not
    _anchor(allocation, log_probs, att, [0, 0])
    assert allocation.closed == {0: 0, 1: 1}  # the anchored phrase 0 may start in row 0 only
    assert log_probs[:, 3].tolist() == [-4.5, -0.5]  # pushed down only where the decoder is at the term's words
    assert log_probs[0, 5].item() == pytest.approx(-0.5)  # the term starts as well as the word it replaces would
    assert log_probs[1, 5].item() == -2.0
    assert spec.wanted((0, ()), allocation.closed[1]) == [7]  # row 1 proposes only the unanchored phrase
    assert sorted(spec.wanted((0, ()), allocation.closed[0])) == [5, 7]


def test_the_usual_word_stays_down_at_the_terms_words_once_the_term_is_written():
    spec = Constraints([Phrase("a", ((5,),), "x")], [Anchor((1, 2), frozenset({3}))])
    allocation = BeamAllocation([spec], k=1, device=torch.device("cpu"))
    allocation.follow([0], [5], [0])  # the term written
    att = torch.zeros(1, 2, 1, 3)
    att[0, 1, 0, 1] = 1.0  # still at "x": no "Velo Fahrrad"
    log_probs = torch.full((1, 10), -1.0)
    _anchor(allocation, log_probs, att, [0])
    assert log_probs[0, 3].item() == -5.0 and allocation.closed == {0: 0}


def test_a_term_the_plain_output_already_writes_is_not_anchored():
    att = torch.zeros(2, 1, 3, 3)
    att[:, :, :, 1] = 1.0
    hyp = Hypothesis(text="", tokens=[4, 9, 7], token_logprobs=[-1.0] * 4, score=-4.0, normalized_score=-1.0,
                     attention=att)
    pieces = lambda ids: ["▁le", "▁sable", "."]  # noqa: E731
    assert anchor_for((1, 2), hyp, pieces, [(9,)]) is None  # "sable" is there: nothing to replace
    assert anchor_for((1, 2), hyp, pieces, [(8,), (9, 7)]) is None  # any of the term's spellings
    assert anchor_for((1, 2), hyp, pieces, [(8,)]) == Anchor((1, 2), frozenset({9}))  # "sable", not its article


def test_every_occurrence_of_a_term_in_the_source_is_a_span_of_its_anchor():
    pieces = ["▁A", "▁basket", "▁of", "▁cl", "oth", ",", "▁surrounded", "▁by", "▁cloth", ".", "</s>"]
    assert source_spans(pieces, "cloth") == [(3, 5), (8, 9)]
    spec = Constraints([Phrase("linge", ((9,),), "cloth")])
    assert term_spans([spec], lambda i: pieces) == {0: [((3, 5), (8, 9))]}
    att = torch.zeros(2, 1, 4, 11)
    att[:, :, 1, 3] = att[:, :, 3, 8] = 1.0  # "tissu" written twice, once for each "cloth"
    hyp = Hypothesis(text="", tokens=[4, 7, 5, 7], token_logprobs=[-1.0] * 5, score=-5.0, normalized_score=-1.0,
                     attention=att)
    found = anchor_for(((3, 5), (8, 9)), hyp, lambda ids: ["▁de", "▁tissu", "▁de", "▁tissu"], [(9,)], "linge")
    assert found == Anchor((3, 5), frozenset({7}), ((8, 9),)) and found.spans == ((3, 5), (8, 9))


def test_a_repeated_term_replaces_the_usual_word_at_its_second_occurrence_too():
    spec = Constraints([Phrase("linge", ((5,),), "cloth")], [Anchor((1, 2), frozenset({3}), ((4, 5),))])
    allocation = BeamAllocation([spec], k=1, device=torch.device("cpu"))
    allocation.follow([0], [5], [0])  # "linge" written for the first "cloth"
    att = torch.zeros(1, 2, 1, 6)
    att[0, 1, 0, 4] = 1.0  # now at the second "cloth"
    log_probs = torch.full((1, 10), -3.0)
    log_probs[0, 3] = -0.5  # the model's "tissu" again
    _anchor(allocation, log_probs, att, [0])
    assert log_probs[0, 3].item() == -4.5 and log_probs[0, 5].item() == pytest.approx(-0.5)
    once = Constraints([Phrase("linge", ((5,),), "cloth")], [Anchor((1, 2), frozenset({3}))])
    allocation = BeamAllocation([once], k=1, device=torch.device("cpu"))
    allocation.follow([0], [5], [0])
    att[0, 1, 0, 4], att[0, 1, 0, 1] = 0.0, 1.0  # a term met, still at its only occurrence: not offered again
    log_probs = torch.full((1, 10), -3.0)
    log_probs[0, 3] = -0.5
    _anchor(allocation, log_probs, att, [0])
    assert log_probs[0, 3].item() == -4.5 and log_probs[0, 5].item() == -3.0


def test_a_term_written_elided_or_left_untranslated_is_not_anchored():
    att = torch.zeros(2, 1, 4, 3)
    att[:, :, 1:, 1] = 1.0  # "l", "'", "accordéon" all attend to "accordion"
    hyp = Hypothesis(text="", tokens=[4, 6, 7, 8], token_logprobs=[-1.0] * 5, score=-5.0, normalized_score=-1.0,
                     attention=att)
    pieces = lambda ids: ["▁de", "▁l", "'", "accordéon"]  # noqa: E731
    assert writes_word(pieces(None), "accordéon") and not writes_word(pieces(None), "accord")
    # the term's own spelling is "▁" "accordéon" (9, 8): not the output's tokens, but the output's word
    assert anchor_for((1, 2), hyp, pieces, [(9, 8)], "accordéon") is None
    assert anchor_for((1, 2), hyp, pieces, [(10, 11)], "Akkordeon") == Anchor((1, 2), frozenset({8}))  # not "l"
    # a usual word spelled with the term's own first token ("Treppe" for "Treppen"): the anchor only gates
    assert anchor_for((1, 2), hyp, pieces, [(8, 10)], "accordéons") == Anchor((1, 2))
    att[:, :, :, 1], att[:, :, :, 0] = 0.0, 1.0  # no output word attends to the term: nothing to replace
    assert anchor_for((1, 2), hyp, pieces, [(10, 11)], "Akkordeon") is None


def test_a_term_under_way_continues_for_free_and_does_not_run_on_inside_the_word():
    spec = Constraints([Phrase("ab", ((5, 6),), "x")], [Anchor((1, 2))], inner=torch.tensor([8, 9]))
    allocation = BeamAllocation([spec], k=1, device=torch.device("cpu"))
    allocation.follow([0], [5], [0])  # the term begun
    log_probs = torch.full((1, 10), -3.0)
    _anchor(allocation, log_probs, torch.zeros(1, 2, 1, 3), [0])
    assert log_probs[0, 6].item() == 0.0
    allocation.follow([0], [6], [0])  # met: the next word-inner pieces lose the penalty
    log_probs = torch.full((1, 10), -3.0)
    _anchor(allocation, log_probs, torch.zeros(1, 2, 1, 3), [0])
    assert log_probs[0, 8:].tolist() == [-7.0, -7.0] and log_probs[0, 7].item() == -3.0


def test_decode_anchored_reads_the_usual_word_then_falls_back_where_a_term_is_still_missing():
    spec = Constraints([Phrase("Velo", ((9,),), "bicycle")])
    att = torch.zeros(2, 1, 2, 3)
    att[:, :, 1, 1] = 1.0  # the second output token was written while attending to "bicycle"
    calls = []

    def decode(index, config, specs):
        calls.append((list(index), config.return_attention, None if specs is None else specs[0].anchors))
        if len(calls) == 1:
            return [[Hypothesis(text="", tokens=[4, 7], token_logprobs=[-1.0, -1.0, -1.0], score=-3.0,
                                normalized_score=-3.0, attention=att)]]
        met = [False] if len(calls) == 2 else [True]
        return [[Hypothesis(text="", tokens=[9], token_logprobs=[-1.0], score=-1.0, normalized_score=-1.0,
                            constraints_met=met)]]

    out = decode_anchored(decode, 1, [spec], DecodingConfig(strategy="beam"), lambda i: ["▁a", "▁bicycle", "</s>"],
                          lambda ids: ["▁Ein", "▁Fahrrad"])
    assert calls == [([0], True, None), ([0], False, (Anchor((1, 2), frozenset({7})),)), ([0], False, (None,))]
    assert out[0][0].constraints_met == [True]  # the plain constrained search's answer
    assert term_spans([None, spec], lambda i: ["▁red", "▁car"]) == {}  # the term's words are not in the source
    assert anchor_for((1, 2), None, lambda ids: []) == Anchor((1, 2))  # no output to read: the gate only


def test_a_tiny_model_places_an_anchored_term_and_anchor_terms_false_is_plain_constrained_search():
    model = random_model(seed=3)
    texts = ["a b c d", "c d e"]
    config = DecodingConfig(strategy="beam", beam_size=3, max_length=20)
    terms = [[Term("x y", "b")], []]
    anchored = generate(model, texts, config, constraints=terms)
    assert anchored[0].hypotheses[0].constraints_met == [True] and "x y" in anchored[0].text
    plain = generate(model, texts, config, constraints=[["x y"], []])
    off = generate(model, texts, config, constraints=terms, anchoring=Anchoring(terms=False))
    assert [h.tokens for r in off for h in r.hypotheses] == [h.tokens for r in plain for h in r.hypotheses]
    assert anchored[1].text == plain[1].text  # a sentence without terms is not touched


def test_the_anchoring_options_are_checked_and_are_no_decoding_options():
    with pytest.raises(ValueError, match=r"anchoring's gate must be a number in \[0, 1.0\], got 1.5"):
        Anchoring(gate=1.5)
    with pytest.raises(ValueError, match=r"anchoring's penalty must be a number in \[0, inf\], got -1"):
        Anchoring(penalty=-1)
    with pytest.raises(ValueError, match="anchoring's terms must be true or false, got 'yes'"):
        Anchoring(terms="yes")
    with pytest.raises(ValueError, match="unknown decoding options"):
        DecodingConfig().replace(anchor_gate=0.5)


def _check_replaced(text: str) -> None:
    assert "Velo" in text and "Gasse" in text, text
    assert "Fahrrad" not in text and "Straße" not in text, text
    assert not text.startswith(("Velo", "Gasse")), text


@pytest.fixture(scope="module")
def en_de():
    if not (EN_DE / "config.json").is_file():
        pytest.skip("the shipped en-de model is not in space/models")
    from transformer_hub import Transformer

    return Transformer.from_pretrained(EN_DE).eval()


def test_the_glossary_replaces_the_words_it_translates_on_the_shipped_model(en_de):
    options = dict(strategy="beam", beam_size=5, glossary=TERMS, split_sentences=False)
    before = translate_texts(en_de, [SENTENCE], anchoring=Anchoring(terms=False), **options)[0].text
    assert "Fahrrad" in before or before.startswith(("Velo", "Gasse"))  # what constrained search alone gave
    result = translate_texts(en_de, [SENTENCE], **options)[0]
    _check_replaced(result.text)
    assert [e.target for e in result.glossary] == ["Velo", "Gasse"] and not result.warnings


def test_the_spaces_rest_translate_replaces_the_words_too(en_de):
    from helpers.space_fixtures import serving
    from space.hosting.limits import Limits

    with serving([EN_DE], Limits(max_chars=300, max_lines=6, max_sentences=6, max_output_tokens=60,
                                 max_beam=6, max_models=4)) as served:
        body = json.dumps({"q": SENTENCE, "source": "en", "target": "de", "glossary": "bicycle\tVelo\nstreet\tGasse"})
        request = urllib.request.Request(served.url.rstrip("/") + "/translate", data=body.encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = json.loads(response.read())
    _check_replaced(answer["translatedText"])
    assert answer["glossary"] == [{"source": "bicycle", "target": "Velo"}, {"source": "street", "target": "Gasse"}]
