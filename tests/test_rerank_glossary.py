"""The quality mode with a glossary (``Reranker.generate(..., glossary=...)``; ``translate --quality best
--glossary FILE``): the reranker chooses among the constrained search's n-best, so its output keeps the terms."""
import pytest

from helpers.cli import run
from helpers.decoding_fixtures import one_thread
from helpers.scoring_models import MULTILINGUAL, random_model
from transformer_hub.rerank import RERANK_FILE, DirectionWeights, Reranker, RerankFile, SearchSettings
from transformer_hub.text import translate_texts
from transformer_hub.text.glossary import Entry, Glossary

TEXTS = ["a big dog .", "two small people near the water .", "green shirt ."]
TERMS = {"dog": "wasser", "people": "gruen"}
WEIGHTS = {"forward": DirectionWeights({"forward": 1.0}, 0.6, SearchSettings(4, 0.6)),
           "reverse": DirectionWeights({"reverse": 1.0}, 0.6, SearchSettings(4, 0.6)),
           "mixed": DirectionWeights({"forward": 1.0, "reverse": 0.5, "mbr_chrf": 3.0, "length_ratio": -1.0}, 1.0,
                                     SearchSettings(4, 0.6))}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


@pytest.fixture(scope="module")
def model():
    return random_model(seed=1, **MULTILINGUAL)


def constrained_nbest(model, text, glossary, beam=4):
    """The glossary's constrained search's n-best strings (terms anchored to their source words, as the library
    decodes a glossary) that contain every term, in beam order, each once."""
    (result,) = translate_texts(model, [text], strategy="beam", beam_size=beam, n_best=beam, length_penalty=0.6,
                                src_lang="en", tgt_lang="de", glossary=glossary, split_sentences=False)
    return list(dict.fromkeys(h.text for h in result.hypotheses if all(h.constraints_met)))


@pytest.mark.parametrize("weights", list(WEIGHTS))
def test_the_reranked_output_keeps_the_glossary_terms_whatever_the_weights(model, weights):
    reranker = Reranker(model, RerankFile({"en-de": WEIGHTS[weights]}))
    out = reranker.generate(TEXTS, "en", "de", glossary=TERMS)
    plain = reranker.generate(TEXTS, "en", "de")
    assert "wasser" in out[0].text and "gruen" in out[1].text
    assert out[0].candidates == constrained_nbest(model, TEXTS[0], {"dog": "wasser"})
    assert all("wasser" in c for c in out[0].candidates) and all("gruen" in c for c in out[1].candidates)
    assert "wasser" not in plain[0].text and "gruen" not in plain[1].text  # the glossary put them there
    assert (out[2].text, out[2].candidates) == (plain[2].text, plain[2].candidates)  # no term in it: as before
    assert [r.glossary for r in out] == [[Entry("dog", "wasser")], [Entry("people", "gruen")], []]
    assert not any(r.warnings for r in out)


def test_quality_fast_with_a_glossary_is_the_constrained_beam(model):
    reranker = Reranker(model, RerankFile({"en-de": WEIGHTS["mixed"]}))
    fast = reranker.translate(TEXTS, "en", "de", quality="fast", glossary=TERMS)
    want = translate_texts(model, TEXTS, strategy="beam", beam_size=4, length_penalty=0.6, src_lang="en",
                           tgt_lang="de", glossary=TERMS, split_sentences=False)
    assert fast == [r.text for r in want] and "wasser" in fast[0]


def test_a_term_that_cannot_fit_is_a_warning_and_every_candidate_stays(model):
    long_term = " ".join("qwertzuiopasdfghjklyxcvbnm" * 3)  # 78 one-letter words: past the length budget
    reranker = Reranker(model, RerankFile({"en-de": WEIGHTS["forward"]}))
    (out,) = reranker.generate(TEXTS[:1], "en", "de", glossary={"dog": long_term})
    (want,) = translate_texts(model, TEXTS[:1], strategy="beam", beam_size=4, n_best=4, length_penalty=0.6,
                              src_lang="en", tgt_lang="de", glossary={"dog": long_term}, split_sentences=False)
    assert out.warnings == want.warnings and "could not be placed" in out.warnings[0]
    assert out.candidates == list(dict.fromkeys(h.text for h in want.hypotheses))


@pytest.fixture(scope="module")
def tuned_dir(model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tuned") / "model"
    model.save_pretrained(folder)
    RerankFile({"en-de": WEIGHTS["mixed"]}, command="test").save(folder / RERANK_FILE)
    return folder


def test_the_cli_quality_mode_refuses_a_glossary_in_one_line(tuned_dir, tmp_path, monkeypatch, capsys):
    """The pipeline's quality best has no constrained search yet: the CLI says so before loading anything."""
    terms = tmp_path / "terms.tsv"
    terms.write_text("dog\twasser\n", encoding="utf-8")
    status, out, err = run(["translate", "--model", str(tuned_dir), "--quality", "best", "--src-lang", "en",
                            "--tgt-lang", "de", "--glossary", str(terms)], b"a dog .\n", monkeypatch, capsys)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--quality best does not combine with --glossary" in err, err
