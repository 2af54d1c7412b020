"""Text of neither domain (``transformer_hub.text.explained``), by construction: a hand-built classifier of two
domains whose words are chosen, so a text of unknown words, or only of words both domains use alike, is flagged,
in-domain texts are not, and one or two words are never judged; the optional ``explained`` of ``domains.json``
(files without it keep working), the calibration's share, the reason in words, the pipeline's results and the
page's note."""
import math
import random

import pytest

from transformer_hub.text import explained
from transformer_hub.text.domain import DomainClassifier, features
from transformer_hub.text.pipeline import translate_texts

CAPTION_WORDS, SOFTWARE_WORDS, SHARED = ["dog", "man", "street"], ["click", "file", "menu"], ["a", "the"]
VAL = {"captions": {"en": ["a man and a dog", "the dog in the street", "a man on the street"]},
       "software": {"en": ["click the menu", "open the file menu", "click a file"]}}
UNKNOWN = "zorp blick quux frob"  # no word or 4-gram of it is in the vocabulary
REASON = ("this text looks like neither captions nor software: the model was not trained on such text, and its "
          "translation may be wrong however fluent it reads")


def hand_built() -> DomainClassifier:
    """Each domain's own words counted 100 times, never in the other; "a" and "the" 100 times in both."""
    vocabulary = CAPTION_WORDS + SOFTWARE_WORDS + SHARED
    counts = {"captions": [100 if w in CAPTION_WORDS + SHARED else 0 for w in vocabulary],
              "software": [100 if w in SOFTWARE_WORDS + SHARED else 0 for w in vocabulary]}
    return DomainClassifier(vocabulary, counts, {d: sum(row) for d, row in counts.items()})


@pytest.fixture
def classifier() -> DomainClassifier:
    found = hand_built()
    found.explained = explained.calibrate(found, VAL)
    return found


def test_evidence_is_the_mean_log_ratio_per_feature_and_does_not_grow_with_the_text():
    c = hand_built()
    ratio = math.log(101)  # an own word: (100 + 1) / (0 + 1) with Laplace smoothing over equal totals
    text = "the dog the man"
    assert c.evidence(text)["captions"] == pytest.approx(2 * ratio / len(features(text)), rel=1e-12)
    assert c.evidence(text)["software"] == pytest.approx(-2 * ratio / len(features(text)), rel=1e-12)
    assert c.evidence(" ".join([text] * 20)) == pytest.approx(c.evidence(text), rel=1e-12)
    assert c.scores(" ".join([text] * 20))["captions"] > c.scores(text)["captions"]  # the posterior does grow
    assert c.evidence(UNKNOWN) == {"captions": 0.0, "software": 0.0} and c.evidence("123 !") == {}


def test_a_text_of_unknown_or_shared_words_is_flagged_and_in_domain_texts_are_not(classifier):
    assert classifier.predict([UNKNOWN])[0][1] == 0.5 and classifier.predict(["the the a the"])[0][1] == 0.5
    for text in (UNKNOWN, "the the a the", "a zorp the blick"):
        found = explained.fit(classifier, text, "en")
        assert found is not None and not found.explained, text
    for text in [t for row in VAL.values() for t in row["en"]] + ["a dog and a man in the street",
                                                                  "click the file menu"]:
        assert explained.fit(classifier, text, "en").explained, text
    caption = explained.fit(classifier, "the man and the dog", "en")
    assert caption.domain == "captions" and caption.evidence > explained.threshold(classifier, "captions", "en")


def test_one_or_two_words_are_never_judged(classifier):
    assert explained.fit(classifier, "zorp blick", "en") is None and explained.fit(classifier, "zorp", "en") is None
    assert explained.fit(classifier, "zorp blick quux", "en") is not None  # MIN_WORDS = 3
    assert explained.MIN_WORDS == classifier.explained["min_words"] == 3


def test_the_threshold_lets_the_share_of_each_languages_val_sentences_through():
    c = hand_built()
    rng = random.Random(0)
    own = {"captions": CAPTION_WORDS, "software": SOFTWARE_WORDS}
    val = {d: {lang: [" ".join(rng.choice(own[d] if rng.random() < 0.2 + 0.6 * rng.random() else SHARED + ["zorp"])
                               for _ in range(rng.randint(3, 12))) for _ in range(300)] for lang in ("en", "de")}
           for d in own}
    c.explained = explained.calibrate(c, val, share=0.97)
    assert set(c.explained["thresholds"]["captions"]) == {"*", "en", "de"}
    for domain, per_lang in val.items():
        for lang, texts in per_lang.items():
            counted = explained.passed(c, texts, lang)
            assert counted["judged"] == 300 and counted["explained"] >= 0.97 * 300, (domain, lang)
            own_evidence, least = [c.evidence(t)[domain] for t in texts], explained.threshold(c, domain, lang)
            assert sum(e >= least for e in own_evidence) >= 0.97 * 300
            assert sum(e >= least + 1e-4 for e in own_evidence) < 0.97 * 300  # the largest such (to 1e-4)
    assert explained.threshold(c, "software", "xx") == c.explained["thresholds"]["software"]["*"]  # not calibrated
    with pytest.raises(ValueError, match="held-out sentences of every domain"):
        explained.calibrate(c, {"captions": val["captions"]})
    with pytest.raises(ValueError, match="a share in"):
        explained.calibrate(c, val, share=0)


def test_domains_json_without_explained_keeps_working_and_a_bad_one_is_refused(classifier, tmp_path):
    old = hand_built().to_dict()
    assert "explained" not in old  # what files written before it hold
    again = DomainClassifier.from_dict(old)
    assert again.explained is None and explained.fit(again, UNKNOWN, "en") is None  # nothing flagged
    classifier.save(tmp_path)
    loaded = DomainClassifier.from_folder(tmp_path)
    assert loaded.explained == classifier.explained and explained.fit(loaded, UNKNOWN, "en") == \
        explained.fit(classifier, UNKNOWN, "en")
    assert classifier.with_domain("legal", ["the court rules"]).explained is None  # one more domain: uncalibrated
    for bad in ({"share": 0.98, "min_words": 3, "thresholds": {"captions": {"*": 0.1}}},
                {"share": 0.98, "min_words": 3, "thresholds": {"captions": {"en": 0.1}, "software": {"*": 0.1}}},
                {"share": 2, "min_words": 3, "thresholds": {"captions": {"*": 0.1}, "software": {"*": 0.1}}},
                {"share": 0.98, "min_words": 3, "thresholds": {"captions": {"*": "x"}, "software": {"*": 0.1}}},
                [1, 2]):
        with pytest.raises(ValueError, match="domains.json is not a domain classifier: .*explained must be"):
            DomainClassifier.from_dict({**old, "explained": bad})


def test_the_reason_names_the_domains_in_words():
    assert explained.reason(["captions", "software"]) == REASON
    labels = {"captions": "image captions", "software": "software documentation"}
    assert explained.reason(["captions", "software"], labels, one_model=False).startswith(
        "this text looks like neither image captions nor software documentation: the models were not trained on "
        "such text")
    assert explained.reason(["captions", "software", "legal"]).startswith(
        "this text looks like none of captions, software or legal: ")


def test_the_pipeline_marks_each_sentence_and_its_text(classifier, tiny_model):
    tiny_model.domain_data = classifier.to_dict()  # as hub loading reads domains.json
    texts = [f"A man and a dog. {UNKNOWN}.", "A dog in the street.", "zorp blick.", "Click the file menu."]
    results = translate_texts(tiny_model, texts, src_lang="en", tgt_lang="de", strategy="greedy", max_length=8)
    assert [[s.unfamiliar for s in r.sentences] for r in results] == [[None, REASON], [None], [None], [None]]
    assert [r.unfamiliar for r in results] == [REASON, None, None, None]
    assert results[2].sentences[0].domain_evidence is None  # two words: not judged
    assert results[0].sentences[1].domain_evidence == 0.0 and results[1].sentences[0].domain_evidence > 0.4
    tiny_model.domain_data = hand_built().to_dict()  # an older file without thresholds: nothing flagged
    again = translate_texts(tiny_model, texts[:1], src_lang="en", tgt_lang="de", strategy="greedy", max_length=8)
    assert again[0].unfamiliar is None and again[0].sentences[1].domain_evidence is None


def test_the_pages_note_gives_the_reason_and_the_sentences():
    from space.pictures import word_view

    sentences = [{"source": "A dog runs.", "translation": "Ein Hund rennt.", "confidence": 0.9, "doubt": False,
                  "unfamiliar": None, "unsure": False},
                 {"source": "Where is the train station?", "translation": "Wird ist die Zugabstand?",
                  "confidence": 0.9, "doubt": False, "unfamiliar": REASON, "unsure": True}]
    note = word_view.note({"sentences": sentences})
    assert note == f"⚠ Unsure of 1 of 2 sentence(s) (“Where is the train station?”): {REASON}."
    assert "The model is unsure of" not in note  # its words were sure: no doubt line
