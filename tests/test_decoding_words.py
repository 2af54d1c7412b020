"""Words, not pieces: word grouping, whole-word alternatives, and the unsure flag (with its val measurement)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from transformer_hub.decoding import CONFIDENCE_THRESHOLD, Hypothesis
from transformer_hub.decoding import words as word_level

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "unsure_flag.json"
MULTILINGUAL = ROOT / "space" / "models" / "multilingual"


def _hypothesis(tokenizer, text: str, probabilities) -> Hypothesis:
    ids = tokenizer.encode(text, side="target")
    probabilities = list(probabilities) if not callable(probabilities) else [probabilities(i) for i in range(len(ids))]
    logprobs = [math.log(p) for p in probabilities] + [math.log(0.99)]  # + eos
    return Hypothesis(text=text, tokens=ids, token_logprobs=logprobs, score=sum(logprobs), normalized_score=0.0)


def test_words_group_pieces_at_the_word_marker_and_split_off_punctuation():
    pieces = ["▁Ein", "▁Hu", "nd", ".", "▁Er", "▁läuft", ",", "▁schnell", "!"]
    found = word_level.words(pieces, [math.log(0.5)] * len(pieces) + [0.0])
    assert [w.text for w in found] == ["Ein", "Hund", ".", "Er", "läuft", ",", "schnell", "!"]
    assert [w.space for w in found] == [True, True, False, True, True, False, True, False]
    assert (found[1].start, found[1].end) == (1, 3) and found[1].probability == pytest.approx(0.25, rel=1e-12)
    assert word_level.join((w.text, w.space) for w in found) == "Ein Hund. Er läuft, schnell!"


class _Pieces:
    """A tokenizer over a fixed piece table: enough for ``openings`` and ``rank``."""

    def __init__(self, table):
        self.table = table

    def pieces(self, ids, side="target"):
        return [self.table[i] for i in ids]

    def decode(self, ids, side="target"):
        return "".join(self.table[i] for i in ids).replace("▁", " ").strip()

    def encode(self, text, side="target"):
        out, rest = [], "▁" + text.replace(" ", "▁")
        while rest:  # longest match first
            i = max((i for i, p in enumerate(self.table) if p and rest.startswith(p)), key=lambda i: len(self.table[i]))
            out.append(i)
            rest = rest[len(self.table[i]):]
        return out


TABLE = ["", "", "", "▁Ein", "▁La", "ter", "▁Ha", "us", "▁Haus", "e", ".", "▁H", "▁Gart", "en"]


def test_openings_keep_pieces_that_start_a_word_and_leave_the_word_open():
    tok = _Pieces(TABLE)
    alternatives = [(4, 0.4), (9, 0.2), (6, 0.1), (2, 0.1), (10, 0.05), (8, 0.05)]  # ▁La, e, ▁Ha, eos, ., ▁Haus
    assert word_level.openings(tok, [3], alternatives, special={0, 1, 2}) == ["Ein La", "Ein Ha", "Ein.", "Ein Haus"]
    # "." is a word of its own; "e" would glue onto "Ein" and eos is no word: both left out


def test_rank_merges_spellings_of_one_word_and_marks_the_current_one():
    tok = _Pieces(TABLE)

    def completed(ids, probabilities):
        lps = [math.log(p) for p in probabilities]
        return Hypothesis(text="", tokens=ids, token_logprobs=lps, score=sum(lps), normalized_score=0.0)

    current = word_level.Word("Later", 1, 3, 0.3, True)
    completions = [completed([3, 6, 7, 10], [0.9, 0.1, 0.5, 0.9]),   # Ein Ha|us . -> Haus 0.05
                   completed([3, 8, 10], [0.9, 0.2, 0.9]),            # Ein Haus .  -> Haus 0.2
                   completed([3, 12, 13, 10], [0.9, 0.01, 0.3, 0.9]),  # Ein Gart|en -> 0.003: below the floor
                   completed([3, 4, 5, 10], [0.9, 0.3, 1.0, 0.9])]     # the current word's own spelling again
    ranked = word_level.rank(tok, ["Ein Ha", "Ein Haus", "Ein Gart", "Ein La"], completions, current, [4, 5], k=5)
    assert [(c.text, c.current) for c in ranked] == [("Later", True), ("Haus", False)]
    assert ranked[0].probability == pytest.approx(0.3) and ranked[1].probability == pytest.approx(0.25)


@pytest.fixture(scope="module")
def multilingual():
    from transformer_hub import Transformer

    if not (MULTILINGUAL / "model.safetensors").exists():
        pytest.skip("the shipped multilingual model is absent")
    return Transformer.from_pretrained(MULTILINGUAL).eval()


def test_word_alternatives_are_whole_words_of_the_model(multilingual):
    """Each alternative of the least sure word of a real translation is a whole word (no piece marker), they
    are ranked by probability, the output's own word is marked, and a word's probability is at most 1."""
    from transformer_hub.decoding import generate

    text = "Later, she meets a friend for coffee near the river."
    hyp = generate(multilingual, [text], src_lang="en", tgt_lang="de", strategy="greedy")[0].best
    found = word_level.words(multilingual.tokenizer.pieces(hyp.tokens), hyp.token_logprobs)
    word = min(range(len(found)), key=lambda i: found[i].probability if found[i].text.isalpha() else 2.0)
    choices = word_level.word_alternatives(multilingual, text, word, src_lang="en", tgt_lang="de")
    assert 2 <= len(choices) <= 5 and [c.text for c in choices if c.current] == [found[word].text]
    assert all("▁" not in c.text and " " not in c.text and c.text for c in choices)
    assert [c.probability for c in choices] == sorted((c.probability for c in choices), reverse=True)
    assert all(word_level.MIN_PROBABILITY <= c.probability <= 1.0 for c in choices)
    assert len({c.text for c in choices}) == len(choices)
    with pytest.raises(ValueError, match="out of range"):
        word_level.word_alternatives(multilingual, text, 99, src_lang="en", tgt_lang="de")


def test_one_doubtful_word_among_sure_ones_flags_the_sentence(tiny_tokenizer):
    """A mean hides one doubtful word: every piece at 0.97 but one word at 0.002 keeps the mean far above
    both thresholds, and the sentence is flagged by its least likely word; the same sentence without it is not."""
    text = "Ein Hund rennt über die grüne Wiese ."
    ids = tiny_tokenizer.encode(text, side="target")
    pieces = tiny_tokenizer.pieces(ids)
    doubtful = max(i for i, p in enumerate(pieces) if p.startswith("▁"))  # the last word's first piece
    one_bad = word_level.doubt(_hypothesis(tiny_tokenizer, text, lambda i: 0.002 if i == doubtful else 0.97),
                               tiny_tokenizer)
    assert one_bad.mean > max(word_level.MEAN_THRESHOLD, CONFIDENCE_THRESHOLD)  # the mean alone misses it
    assert one_bad.lowest_word < word_level.LOWEST_WORD_THRESHOLD and one_bad.unsure()
    sure = word_level.doubt(_hypothesis(tiny_tokenizer, text, lambda i: 0.97), tiny_tokenizer)
    assert not sure.unsure() and sure.lowest_word == pytest.approx(0.97 ** max(
        w.end - w.start for w in word_level.words(pieces, [0.0] * len(pieces))))
    low_mean = word_level.doubt(_hypothesis(tiny_tokenizer, text, lambda i: 0.5), tiny_tokenizer)
    assert low_mean.unsure()  # every word at 0.5 or below: the mean flags it


def test_the_val_measurement_chose_the_thresholds_the_library_uses():
    """docs/unsure_flag.json (made by scripts/unsure_flag.py at commit 6d4edca): its chosen pair is the library's, its
    'before' is the mean-only flag, the new flag catches more of the lowest-chrF sentences, and the
    figures in docs/design.md and docs/python.md are the file's."""
    saved = json.loads(RESULTS.read_text())
    assert saved["after"]["mean"] == word_level.MEAN_THRESHOLD
    assert saved["after"]["lowest_word"] == word_level.LOWEST_WORD_THRESHOLD
    assert saved["before"]["mean"] == CONFIDENCE_THRESHOLD and saved["before"]["lowest_word"] == 0.0
    assert saved["after"]["flagged_lowest"] > saved["before"]["flagged_lowest"]
    design, page_text = (ROOT / "docs" / "design.md").read_text(), (ROOT / "docs" / "python.md").read_text()
    for name in ("before", "after", "mean_only"):
        r = saved[name]
        row = f"| {100 * r['flagged_lowest']:.1f} % | {100 * r['flagged_all']:.1f} % | {100 * r['precision']:.1f} % |"
        assert row in design, row
    assert f"{saved['sentences']:,} in all" in design
    per = saved.get("per_domain", {})
    if per:  # calibrated on several domains: each domain's share and level, and what the word adds, as printed
        c, w, flat = per["captions"], per["software"], " ".join(design.split())
        assert (f"catches {100 * c['flagged_lowest']:.1f} % of the captions' lowest tenth (flagging "
                f"{100 * c['flagged_all']:.1f} % of them) and {100 * w['flagged_lowest']:.1f} % of the software's "
                f"({100 * w['flagged_all']:.1f} %)") in flat
        assert f"below {c['lowest_chrf_below']:.1f} on captions, {w['lowest_chrf_below']:.1f} on software" in flat
        more = 100 * (saved["after"]["flagged_lowest"] - saved["mean_only"]["flagged_lowest"])
        flagged = 100 * (saved["after"]["flagged_all"] - saved["mean_only"]["flagged_all"])
        assert f"({more:.1f} % more of the lowest tenth, for {flagged:.1f} % more flagged)" in flat
    assert f"flags {100 * saved['after']['flagged_lowest']:.1f} % of the val sentences of lowest chrF" in page_text
    assert f"against {100 * saved['after']['flagged_all']:.1f} % of all" in page_text
