"""The domain of a text: the naive-Bayes classifier (text/domain.py) and its file, the pipeline's ``domain``
(given or "auto") reaching a tagged model's source and the choice of model, and the cards' scores per domain."""
import pytest

from test_domains import corpora, run_args, tagged, SOFT_DE, SOFT_EN  # noqa: F401 - the fixtures
from helpers.training import DE, EN
from scripts import domain_classifier
from transformer_hub import Transformer
from transformer_hub.config import TransformerConfig
from transformer_hub.decoding import generate
from transformer_hub.hub.loading import CheckpointError, DOMAINS_FILE
from transformer_hub.hub.results import METRICS
from transformer_hub.hub.selection import best_model, candidate
from transformer_hub.text.domain import DomainClassifier, features
from transformer_hub.text.pipeline import ModelSet, OneModel, translate_texts

TEXTS = {"captions": ["A man rides a bicycle down the street.", "Two dogs play in the snow.",
                      "A woman in a red coat walks past a shop."],
         "software": ["Click the Save button to save the file.", "Select a cell in the table.",
                      "Choose Format - Cells and open the Numbers tab."]}


def test_letter_grams_let_an_unseen_word_lean_to_its_domain():
    assert features("Tab") == ["tab", "~#tab", "~tab#"]
    classifier = DomainClassifier.train(TEXTS)
    assert [d for d, _ in classifier.predict(["Open the table.", "A dog in the street."])] == ["software", "captions"]
    assert classifier.predict(["Tables"])[0][0] == "software"  # never seen, but built like "table"
    domain, p = classifier.predict(["123 !!"], default="software")[0]  # no letters at all: the default, undecided
    assert (domain, p) == ("software", pytest.approx(0.5))


def test_the_classifier_file_round_trips_and_bad_files_are_refused(tmp_path):
    classifier = DomainClassifier.train(TEXTS, made_by="a test")
    classifier.save(tmp_path)
    again = DomainClassifier.from_folder(tmp_path)
    probe = ["Select the file.", "A man and a dog.", "nothing known here"]
    assert again.predict(probe) == classifier.predict(probe) and again.made_by == "a test"
    assert DomainClassifier.from_folder(tmp_path / "none") is None
    (tmp_path / DOMAINS_FILE).write_text('{"schema": 7}')
    with pytest.raises(ValueError, match="schema 7; this version reads 1"):
        DomainClassifier.from_folder(tmp_path)
    (tmp_path / DOMAINS_FILE).write_text("[1, 2]")
    with pytest.raises(CheckpointError, match="holds list, not a domain classifier"):
        DomainClassifier.from_folder(tmp_path)


@pytest.fixture(scope="module")
def tagged_with_classifier(tagged, corpora):  # noqa: F811 - the fixture of test_domains
    folder = tagged / "final"
    captions, software = corpora
    assert domain_classifier.main(["--model", str(folder), "--data-dir", f"captions={captions}",
                                   "--data-dir", f"software={software}", "--langs", "en,de"]) == 0
    return Transformer.from_pretrained(folder)


def test_auto_reaches_the_source_tag_the_classifier_chose(tagged_with_classifier):
    model = tagged_with_classifier
    texts = [" ".join(SOFT_EN[:5]), " ".join(EN[:5])]
    results = translate_texts(OneModel(model), texts, src_lang="en", tgt_lang="de", domain="auto")
    assert [r.domain for r in results] == ["software", "captions"]
    assert all(0.5 < r.domain_confidence <= 1 for r in results)
    for result, domain in zip(results, ("software", "captions")):
        alone = generate(model, [result.source], src_lang="en", tgt_lang="de", domain=domain)[0]
        assert result.sentences[0].source_ids == alone.source_ids and result.text == alone.text
        assert alone.source_ids[1] == model.tokenizer.domain_tag_id(domain)


def test_a_given_domain_is_checked_against_the_models(tagged_with_classifier, tiny_model):
    model = tagged_with_classifier
    given = translate_texts(OneModel(model), [" ".join(EN[:4])], src_lang="en", tgt_lang="de", domain="software")[0]
    assert given.domain == "software" and given.domain_confidence is None
    with pytest.raises(ValueError, match=r"unknown domain 'legal': the domains are captions, software \(or auto\)"):
        translate_texts(OneModel(model), ["a man"], src_lang="en", tgt_lang="de", domain="legal")
    with pytest.raises(ValueError, match="unknown domain 'software': this model was trained without domains"):
        translate_texts(OneModel(tiny_model), ["a man"], domain="software")
    plain = translate_texts(OneModel(tiny_model), ["a man"], domain="auto")[0]  # no classifier: no domain
    assert plain.domain is None and plain.domain_confidence is None


def test_a_model_without_domains_beside_a_tagged_one_gets_no_tag(tagged_with_classifier, tiny_model):
    models = ModelSet({"plain": tiny_model, "tagged": tagged_with_classifier})  # unscored: the first serves
    assert models.domains() == ("captions", "software") and models.domain_classifier() is not None
    assert models.domains("plain") == ()
    result = translate_texts(models, [" ".join(EN[:5])], src_lang="en", tgt_lang="de", domain="auto")[0]
    assert result.domain == "captions" and result.model == "plain"
    alone = generate(tiny_model, [result.source], src_lang="en", tgt_lang="de")[0]  # no tag reached it
    assert result.text == alone.text and result.sentences[0].source_ids == alone.source_ids
    # no card scores software: the model trained with its tag reads it, not the first model
    soft = translate_texts(models, [" ".join(SOFT_EN[:4])], src_lang="en", tgt_lang="de", domain="auto")[0]
    assert soft.domain == "software" and soft.model == "tagged"


def _card(*rows):
    return {"results": [{"dataset_type": dataset, "split": split, "direction": "en-de", "metric": "bleu",
                         "metric_name": METRICS["bleu_lowercase"], "value": value} for dataset, split, value in rows]}


def test_the_best_model_is_chosen_per_domain_from_the_cards():
    config = TransformerConfig(**dict(TransformerConfig.preset("tiny").to_dict(), languages=["en", "de"]))
    v2 = candidate("v2", config, _card(("multi30k", "test_2016_flickr", 40.5)))
    v3 = candidate("v3", config, _card(("multi30k", "test_2016_flickr", 40.1), ("libreoffice-help", "test", 31.0),
                                       ("libreoffice-help", "val", 99.0)))
    assert v3.scores_on("software") == {("en", "de"): 31.0} and v3.scores_on(None) == {("en", "de"): 40.1}
    assert best_model([v2, v3], "en", "de").name == "v2"
    assert best_model([v2, v3], "en", "de", "captions").name == "v2"
    assert best_model([v2, v3], "en", "de", "software").name == "v3"  # v2 has no software score: after v3
    assert best_model([v2, v3], "en", "de", "legal").name == "v2"  # nobody scored: the order given
    tags = TransformerConfig(**dict(config.to_dict(), domains=["captions", "software"]))
    unscored = candidate("v3", tags, _card(("multi30k", "test_2016_flickr", 40.1)))
    assert unscored.domains == ("captions", "software")
    assert best_model([v2, unscored], "en", "de", "software").name == "v3"  # nobody scored: the one with the tag
    assert best_model([v2, unscored], "en", "de").name == "v2"  # captions: the cards


def test_the_script_refuses_data_named_unlike_the_models_domains(tagged, corpora, capsys):  # noqa: F811
    captions, software = corpora
    code = domain_classifier.main(["--model", str(tagged / "final"), "--data-dir", f"captions={captions}",
                                   "--data-dir", f"docs={software}", "--langs", "en,de"])
    assert code == 2
    assert "trained with domains ['captions', 'software'], but --data-dir names ['captions', 'docs']" \
        in capsys.readouterr().err


def test_the_script_counts_folders_of_one_domain_together(tagged, corpora, tmp_path):  # noqa: F811
    """v4's software is LibreOffice's help and Debian's catalogs: two folders named software, one domain."""
    import json
    import shutil

    folder, (captions, software) = tmp_path / "model", corpora
    shutil.copytree(tagged / "final", folder)
    code = domain_classifier.main(["--model", str(folder), "--data-dir", f"captions={captions}", "--data-dir",
                                   f"software={software}", "--data-dir", f"software={software}", "--langs", "en"])
    assert code == 0
    found = json.loads((folder / domain_classifier.RESULTS_FILE).read_text())
    assert [r["domain"] for r in found["val"]] == ["captions", "software", "software"]
    assert DomainClassifier.from_folder(folder).domains == ["captions", "software"]


def test_the_script_calibrates_the_flag_for_text_of_neither_domain(tagged_with_classifier, tagged, corpora,
                                                                   tmp_path, capsys):  # noqa: F811
    import json

    from transformer_hub.text import explained

    folder, (captions, software) = tagged / "final", corpora
    classifier = DomainClassifier.from_folder(folder)
    assert classifier.explained["share"] == 0.98 and set(classifier.explained["thresholds"]) == {"captions", "software"}
    everyday = tmp_path / "everyday.tsv"
    everyday.write_text("# hand-written\nen\tzorp blick quux frob\n\nen\tThe the a the.\nde\tJa\n", encoding="utf-8")
    args = ["--model", str(folder), "--data-dir", f"captions={captions}", "--data-dir", f"software={software}",
            "--langs", "en,de"]
    assert domain_classifier.main(args + ["--check-dir", f"software={software}", "--everyday", str(everyday)]) == 0
    found = json.loads((folder / domain_classifier.RESULTS_FILE).read_text())["explained"]
    assert {k: found[k] for k in ("share", "min_words", "thresholds")} == DomainClassifier.from_folder(folder).explained
    assert [(r["domain"], r["lang"]) for r in found["val"]] == [(d, lang) for d in ("captions", "software")
                                                                 for lang in ("en", "de")]
    assert all(r["passed"] >= 98.0 for r in found["val"])  # by the calibration
    assert [r["corpus"] for r in found["checks"]] == [software.name] * 2
    assert [r["passed"] for r in found["checks"]] == [r["passed"] for r in found["val"][2:]]  # the same sentences
    assert found["everyday"] == {"sentences": 3, "judged": 2, "flagged": 2, "flagged_by_lang": {"en": [2, 2],
                                 "de": [0, 1]}, "not_flagged": ["Ja"]}  # "Ja": one word, not judged
    assert "everyday sentences flagged: 2 of 2 judged" in capsys.readouterr().out
    assert explained.fit(classifier, "zorp blick quux frob", "en").explained is False
    everyday.write_text("en The sentence without its tab.\n", encoding="utf-8")
    assert domain_classifier.main(args + ["--everyday", str(everyday)]) == 2
    assert "everyday.tsv:1: write lang<TAB>sentence, got 'en The sentence without its tab.'" in capsys.readouterr().err
    assert domain_classifier.main(args + ["--check-dir", f"legal={software}"]) == 2
    assert "name each --check-dir by one of the domains of --data-dir" in capsys.readouterr().err
