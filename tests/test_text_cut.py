"""``text.cut``: the pipeline's first steps (sentences cut, their domains told) done on their own, as a document's
worker process does them, then handed to ``translate_texts(cut=...)``: the same translation as when the call does
them, which then does neither again."""
import pytest

from test_domain_routing import CAPTIONS, MIXED, SOFTWARE, KeywordClassifier, Recording
from transformer_hub.formats import DocumentError, cut_document, translate_document_texts
from transformer_hub.text import cut as cutting
from transformer_hub.text.pipeline import translate_texts

TEXTS = [MIXED, "Save it.", "", CAPTIONS[0] + "\n\n" + SOFTWARE[0], "12:45"]


def test_a_document_cut_elsewhere_is_translated_as_if_the_call_had_cut_it(monkeypatch):
    called = Recording(tagged=True)
    plain = translate_document_texts(TEXTS, called, "en", tgt_lang="de")
    cut = cut_document(TEXTS, "en", 100, KeywordClassifier(), ("captions", "software"))
    here = []
    monkeypatch.setattr(cutting, "split_sentences", lambda *a: here.append("split"))
    monkeypatch.setattr(KeywordClassifier, "log_likelihoods", lambda *a: here.append("domain"))
    handed = Recording(tagged=True)
    given = translate_document_texts(TEXTS, handed, "en", tgt_lang="de", cut=cut)
    assert here == [] and handed.calls == called.calls  # the same sentences, models and domain tags, in one call
    assert [t.target for t in given] == [t.target for t in plain]
    assert [[(s.domain, s.domain_confidence) for s in t.result.sentences or []] for t in given] == \
           [[(s.domain, s.domain_confidence) for s in t.result.sentences or []] for t in plain]
    assert {s.domain for t in given for s in t.result.sentences or []} == {"captions", "software"}


def test_a_named_domain_is_used_whatever_the_cut_told():
    cut = cut_document([MIXED], "en", None, KeywordClassifier(), ("captions", "software"))
    (done,) = translate_document_texts([MIXED], Recording(tagged=True), "en", tgt_lang="de", cut=cut,
                                       domain="software")
    assert [s.domain for s in done.result.sentences] == ["software"] * 4


def test_the_sentence_limit_is_checked_before_any_domain_is_told(monkeypatch):
    monkeypatch.setattr(KeywordClassifier, "log_likelihoods", lambda *a: pytest.fail("a domain was told"))
    with pytest.raises(DocumentError, match=r"^The document has 4 sentences to translate, the limit is 3: split it "
                                            r"into smaller documents\.$"):
        cut_document([MIXED], "en", 3, KeywordClassifier(), ("captions", "software"))


def test_a_cut_that_does_not_fit_the_call_is_refused_in_words():
    cut = cut_document(TEXTS, "en")
    models = Recording(tagged=True)
    with pytest.raises(ValueError, match="cut's layout 2 is not one of text 2"):
        translate_texts(models, [TEXTS[0], "Another text."] + TEXTS[2:], src_lang="en", tgt_lang="de", cut=cut)
    with pytest.raises(ValueError, match="cut has 5 layouts for 1 texts"):
        translate_texts(models, [MIXED], src_lang="en", tgt_lang="de", cut=cut)
    with pytest.raises(ValueError, match=r"cut needs split_sentences=True and the texts' language \(src_lang a code\)"):
        translate_texts(models, TEXTS, src_lang="auto", tgt_lang="de", cut=cut)
    assert models.calls == []
