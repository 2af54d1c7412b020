"""Domains told per sentence (``transformer_hub.text.routing``): with ``domain="auto"`` a text mixing image captions
and software help has each sentence decoded by its own domain's model and domain tag, one decoding call per model
still; a sentence too short to be sure of takes its paragraph's, then its text's, then (documents) the whole
document's domain.  First by construction, with a keyword classifier and models that record their calls; then the
shipped v3 and its classifier through the library, and the measurements the rule's docstring states."""
import gzip
import math

import pytest

from helpers.corpus import LIBREOFFICE_HELP, LIBREOFFICE_HELP_MISSING, MULTI30K, MULTI30K_MISSING, REPO_ROOT
from transformer_hub.decoding import Hypothesis, TranslationResult
from transformer_hub.formats import translate_document_texts
from transformer_hub.text import routing
from transformer_hub.text.domain import DomainClassifier, words
from transformer_hub.text.models import Models
from transformer_hub.text.pipeline import translate_texts

CAPTION_WORDS = {"man", "woman", "dog", "dogs", "street", "snow", "bike", "shirt"}
SOFTWARE_WORDS = {"click", "save", "button", "menu", "table", "insert", "document", "choose"}
CAPTIONS = ["A man walks his dog down the street.", "Two dogs play in the snow."]
SOFTWARE = ["Click the Save button to save the document.", "To insert a table, choose Insert - Table."]
MIXED = " ".join(CAPTIONS + SOFTWARE)


class KeywordClassifier(DomainClassifier):
    """Each keyword of a domain makes a text 1000 times likelier in it: one keyword and nothing against it gives a
    probability of 0.999 (sure, from 3 words on), one of each 0.5."""

    def __init__(self) -> None:
        super().__init__([], {"captions": [], "software": []}, {"captions": 0, "software": 0})

    def log_likelihoods(self, text: str):
        found = words(text)
        return {"captions": math.log(1000) * sum(w in CAPTION_WORDS for w in found),
                "software": math.log(1000) * sum(w in SOFTWARE_WORDS for w in found)}


class Recording(Models):
    """``tagged``: one model trained with both domain tags; else one untagged model per domain. Each decoding call
    is recorded; an output names the model and the tag it was decoded with."""

    one_model = False

    def __init__(self, tagged: bool = False) -> None:
        self.tagged, self.calls = tagged, []

    def languages(self):
        return ["en", "de"]

    def choose(self, src_lang, tgt_lang, quality="fast", domain=None):
        return "tagged" if self.tagged else f"{domain}-model"

    def domains(self, name=None):
        return ("captions", "software") if self.tagged or name is None else ()

    def domain_classifier(self):
        return KeywordClassifier()

    def decode(self, name, sentences, src_langs, tgt_langs, config, quality="fast", domain=None, **options):
        tags = list(domain) if domain is not None else [None] * len(sentences)
        self.calls.append((name, list(sentences), tags))
        return [TranslationResult(source=s, hypotheses=[Hypothesis(f"<{name}|{t}> {s}", [], [], 0.0, 0.0)])
                for s, t in zip(sentences, tags)], "recorder"


def told(result):
    return [(s.domain, s.model) for s in result.sentences]


def test_each_sentence_of_a_mixed_text_goes_to_its_domains_model_in_one_call_per_model():
    models = Recording()
    (result,) = translate_texts(models, [MIXED], src_lang="en", tgt_lang="de")
    assert told(result) == [("captions", "captions-model")] * 2 + [("software", "software-model")] * 2
    assert models.calls == [("captions-model", CAPTIONS, [None, None]), ("software-model", SOFTWARE, [None, None])]
    assert result.text == " ".join([f"<captions-model|None> {s}" for s in CAPTIONS]
                                   + [f"<software-model|None> {s}" for s in SOFTWARE])
    # a tie: the text's own domain (10 software keywords against 5) is its domain, its model the text's model
    assert (result.domain, result.model, result.engine) == ("software", "software-model", "recorder")
    assert result.mixed_domains and result.domain_counts == {"software": 2, "captions": 2}
    assert all(s.domain_confidence > routing.SURE for s in result.sentences)  # 2 keywords and more: each sure
    assert result.domain_confidence == pytest.approx(1.0, abs=1e-5)  # the mean over its software sentences
    # two mixed texts: still one decoding call per model, each with the sentences of both texts
    models = Recording()
    translate_texts(models, [MIXED, " ".join(reversed(CAPTIONS + SOFTWARE))], src_lang="en", tgt_lang="de")
    assert [(name, len(sentences)) for name, sentences, _ in models.calls] == [("captions-model", 4),
                                                                               ("software-model", 4)]


def test_a_model_trained_with_tags_reads_each_sentence_with_its_own_tag():
    models = Recording(tagged=True)
    (result,) = translate_texts(models, [MIXED], src_lang="en", tgt_lang="de")
    assert models.calls == [("tagged", CAPTIONS + SOFTWARE, ["captions", "captions", "software", "software"])]
    assert told(result) == [("captions", "tagged")] * 2 + [("software", "tagged")] * 2


def test_a_short_sentence_takes_its_paragraphs_domain_and_a_short_paragraph_its_texts():
    models = Recording()
    text = f"{SOFTWARE[0]} Save.\n\n{CAPTIONS[0]} Save."  # "Save." alone: one word, never told on its own
    (result,) = translate_texts(models, [text], src_lang="en", tgt_lang="de")
    assert [s.domain for s in result.sentences] == ["software", "software", "captions", "captions"]
    assert result.text == (f"<software-model|None> {SOFTWARE[0]} <software-model|None> Save.\n\n"
                           f"<captions-model|None> {CAPTIONS[0]} <captions-model|None> Save.")
    # two-word paragraphs say too little: their text's domain (6 software keywords against 1)
    (result,) = translate_texts(Recording(), ["Click Save.\n\nThe dog.\n\nChoose the menu to insert a table."],
                                src_lang="en", tgt_lang="de")
    assert [s.domain for s in result.sentences] == ["software"] * 3 and not result.mixed_domains
    # a text too short to be sure of still gets a domain: the last level decides whatever its probability
    assert translate_texts(Recording(), ["The dog."], src_lang="en", tgt_lang="de")[0].domain == "captions"


def test_a_documents_short_text_takes_the_whole_documents_domain():
    texts = [CAPTIONS[0], "The menu", "A woman rides a bike in the snow."]
    done = translate_document_texts(texts, Recording(), "en", tgt_lang="de", domain="auto")
    assert [t.result.domain for t in done] == ["captions"] * 3  # "The menu" leans software, but 2 words say little
    assert done[1].target == "<captions-model|None> The menu"
    alone = translate_texts(Recording(), texts, src_lang="en", tgt_lang="de")  # no document: each text on its own
    assert [r.domain for r in alone] == ["captions", "software", "captions"]
    # two documents in one call (the REST route's html texts): each short text takes its own document's domain
    docs = translate_texts(Recording(), [CAPTIONS[0], "The menu", SOFTWARE[0], "The dog"], src_lang="en",
                           tgt_lang="de", document_ids=[0, 0, 1, 1])
    assert [r.domain for r in docs] == ["captions", "captions", "software", "software"]
    assert [r.domain for r in translate_texts(Recording(), texts, src_lang="en", tgt_lang="de", document_ids=7)] == \
        ["captions"] * 3  # one id: one document
    with pytest.raises(ValueError, match="document_ids has 2 entries for 3 texts: give one id, or one per text"):
        translate_texts(Recording(), texts, src_lang="en", tgt_lang="de", document_ids=[0, 1])


def test_a_given_domain_is_every_sentences_and_no_classifier_means_none():
    models = Recording()
    (result,) = translate_texts(models, [MIXED], src_lang="en", tgt_lang="de", domain="software")
    assert [name for name, *_ in models.calls] == ["software-model"]
    assert {(s.domain, s.domain_confidence) for s in result.sentences} == {("software", None)}
    assert result.domain_counts == {"software": 4} and not result.mixed_domains

    class Untold(Recording):
        def domain_classifier(self):
            return None

    (result,) = translate_texts(Untold(), [MIXED], src_lang="en", tgt_lang="de")
    assert {s.domain for s in result.sentences} == {None} and result.domain_counts == {}
    with pytest.raises(ValueError, match="unknown domain 'legal': the domains are captions, software"):
        translate_texts(Recording(), [MIXED], src_lang="en", tgt_lang="de", domain="legal")


def test_the_counts_in_words():
    assert routing.describe_domains({"software": 2, "captions": 1}) == "2 sentences read as software, 1 as captions"
    assert routing.describe_domains({"captions": 1}, {"captions": "image captions"}) == \
        "1 sentence read as image captions"
    results = translate_texts(Recording(), [MIXED, SOFTWARE[0]], src_lang="en", tgt_lang="de")
    assert routing.domain_counts(results) == {"software": 3, "captions": 2}


def _val(folder, lang):
    with gzip.open(folder / f"val.{lang}.gz", "rt", encoding="utf-8") as fh:
        return [line.strip() for line in fh]


@pytest.mark.slow  # 9,096 sentences through the shipped classifier
@pytest.mark.data
def test_the_rules_measurements_on_both_val_splits_are_the_docstrings():
    if not (MULTI30K / "val.en.gz").is_file():
        pytest.skip(MULTI30K_MISSING)
    if not (LIBREOFFICE_HELP / "val.en.gz").is_file():
        pytest.skip(LIBREOFFICE_HELP_MISSING)
    classifier = DomainClassifier.from_folder(REPO_ROOT / "space" / "retired" / "multilingual-v3")  # as measured
    rows = [(domain, text) for domain, folder in (("captions", MULTI30K), ("software", LIBREOFFICE_HELP))
            for lang in ("en", "de", "fr", "cs") for text in _val(folder, lang)]
    found = [(domain, classifier.best(classifier.scores(text)), len(words(text))) for domain, text in rows]
    short = [d != told for d, (told, _), n in found if n < routing.MIN_WORDS]
    long = [d != told for d, (told, _), n in found if n >= routing.MIN_WORDS]
    stated = [f"{100 * sum(short) / len(short):.1f} % of the time", f"{100 * sum(long) / len(long):.2f} %"]
    for domain in ("captions", "software"):
        mine = [(told, n, p) for d, (told, p), n in found if d == domain]
        alone = [told for told, n, p in mine if n >= routing.MIN_WORDS and p >= routing.SURE]
        stated += [f"{100 * len(alone) / len(mine):.1f} % of the {domain}",
                   f"{100 * sum(t != domain for t in alone) / len(alone):.2f} %"]
    doc = " ".join(routing.__doc__.split())
    assert all(s in doc for s in stated), stated
