"""The quality mode of a model trained with domain tags: the domain reaches the n-best search and every forced
score, as in ``generate(domain=...)``; tuning reads each domain's val with its tag; the results scripts agree."""
import gzip
import json
import shutil
import sys
from pathlib import Path

import pytest

from helpers.decoding_fixtures import one_thread
from helpers.scoring_models import MULTILINGUAL, random_model
from test_domains import corpora, run_args  # noqa: F401 - the fixture it builds on
from transformer_hub import Transformer
from transformer_hub.decoding import generate
from transformer_hub.decoding.scoring import score_texts
from transformer_hub.rerank import (RERANK_FILE, DirectionWeights, RerankedModel, Reranker, RerankFile,
                                    SearchSettings, collect, rerank_in_worker)
from transformer_hub.text.pipeline import translate_texts
from transformer_hub.training.data import read_lines
from transformer_hub.training.metrics import score
from transformer_hub.training.trainer import main as train

from scripts import domain_results, tune_rerank

SEARCH = SearchSettings(3, 0.6)
WEIGHTS = DirectionWeights({"forward": 1.0, "reverse": 0.5, "mbr_chrf": 1.0}, 0.6, SEARCH)


@pytest.fixture(scope="module")
def folder(corpora, tmp_path_factory):  # noqa: F811
    """A tiny tagged model (enough updates that its two domains' outputs differ) with weights for en<->de."""
    out = tmp_path_factory.mktemp("tagged") / "run"
    assert train(run_args(out, corpora, "--domain-tags", "--max-updates", "40")) == 0
    RerankFile({"en-de": WEIGHTS, "de-en": WEIGHTS}, command="test").save(out / "final" / RERANK_FILE)
    return out / "final"


@pytest.fixture(scope="module")
def reranker(folder):
    return Reranker.from_pretrained(folder)


@pytest.fixture(scope="module")
def sources(corpora):  # noqa: F811
    return read_lines(corpora[1] / "val.en.gz")[:8]


def beam_lists(model, texts, domain):
    with one_thread():
        found = generate(model, texts, strategy="beam", beam_size=3, n_best=3, length_penalty=0.6, src_lang="en",
                         tgt_lang="de", domain=domain)
    return [sorted({h.text for h in r.hypotheses}) for r in found]


def best(models, texts, domain):
    with one_thread():
        return translate_texts(models, texts, src_lang="en", tgt_lang="de", split_sentences=False, quality="best",
                               domain=domain)


def test_best_reranks_the_n_best_that_the_tagged_search_gives(reranker, sources):
    models = RerankedModel(reranker)
    software, default = beam_lists(reranker.model, sources, "software"), beam_lists(reranker.model, sources, None)
    got = {d: [sorted(h.text for h in r.hypotheses) for r in best(models, sources, d)] for d in ("software", None)}
    assert got["software"] == software and got[None] == default
    differ = [i for i, (a, b) in enumerate(zip(software, default)) if a != b]
    assert differ and all(got["software"][i] != got[None][i] for i in differ)


def test_every_forced_score_reads_the_domain_tag(reranker, sources):
    model = reranker.model
    with one_thread():
        lists = collect(model, sources, "en", "de", SEARCH, domain="software")
        other = collect(model, sources, "en", "de", SEARCH)
        candidates = [(n.source, y) for n in lists for y in n.texts]
        xs, ys = [x for x, _ in candidates], [y for _, y in candidates]
        reverse = score_texts(model, ys, xs, src_lang="de", tgt_lang="en", domain="software", alpha=0.6)
        forward = score_texts(model, xs, ys, src_lang="en", tgt_lang="de", domain="software", alpha=0.6)
        untold = score_texts(model, ys, xs, src_lang="de", tgt_lang="en", alpha=0.6)
    assert [v for n in lists for v in n.features["reverse"]] == pytest.approx([r.normalized_score for r in reverse])
    assert [v for n in lists for v in n.forward_raw] == pytest.approx([f.score for f in forward], abs=1e-4)
    assert [r.normalized_score for r in reverse] != pytest.approx([r.normalized_score for r in untold])
    assert [n.texts for n in lists] != [n.texts for n in other]


def test_each_sentence_is_reranked_in_its_own_domain_in_the_pipeline_and_the_worker(reranker, folder, sources):
    texts = sources[:4]
    domains = ["software", "captions", "software", None]
    expected = [reranker.results([t], "en", "de", domain=d)[0] for t, d in zip(texts, domains)]
    got = best(RerankedModel(reranker), texts, domains)
    with one_thread():
        worker = rerank_in_worker(reranker.model, str(folder), texts, ["en"] * 4, ["de"] * 4, domains)
    for e, g, w in zip(expected, got, worker):
        assert [h.text for h in g.hypotheses] == [h.text for h in w.hypotheses] == [h.text for h in e.hypotheses]
    assert [r.domain for r in got] == domains


def test_a_model_without_domains_is_unchanged():
    model = random_model(seed=1, **MULTILINGUAL)
    plain = RerankedModel(Reranker(model, RerankFile({"en-de": WEIGHTS})))
    texts = ["a big dog .", "two small people near the water ."]
    got = [sorted(h.text for h in r.hypotheses) for r in best(plain, texts, None)]
    assert got == beam_lists(model, texts, None)
    with pytest.raises(ValueError, match="unknown domain 'software': this model was trained without domains"):
        best(plain, texts, "software")
    with pytest.raises(ValueError, match="trained without domain tags"):
        plain.reranker.translate(texts, "en", "de", domain="software")


# --------------------------------------------------------------------------- tuning on several domains
def test_tuning_reads_each_domains_val_with_its_tag_and_tunes_on_them_together(folder, corpora, tmp_path):  # noqa: F811
    model = tmp_path / "model"
    shutil.copytree(folder, model)
    opened = []
    hook_on = [True]
    sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" and hook_on[0] else None)
    try:
        status = tune_rerank.main(["--model", str(model), "--data-dir", f"captions={corpora[0]}", "--data-dir",
                                   f"software={corpora[1]}", "--limit", "5", "--beam", "3", "--directions", "en-de",
                                   "--cache", str(tmp_path / "cache")])
    finally:
        hook_on[0] = False
    assert status == 0
    for corpus in corpora:
        assert {Path(p).name for p in opened if Path(p).parent == corpus} == {"val.en.gz", "val.de.gz"}
    tuned = RerankFile.load(model / RERANK_FILE)
    assert tuned.domains == ["captions", "software"] and "val of captions, software" in tuned.data
    assert tuned.directions["en-de"].val["domains"] == {"captions": 5, "software": 5}
    assert tuned.directions["en-de"].val["sentences"] == 10
    sample, _ = tune_rerank.val_sample(corpora[1], "en", "de", 5, 0)
    cached = json.loads(next((tmp_path / "cache").glob("software.en-de.*.json")).read_text())
    with one_thread():
        expected = collect(Transformer.from_pretrained(model), sample, "en", "de", SEARCH, domain="software")
    assert [r["texts"] for r in cached] == [n.texts for n in expected]


def test_tuning_refuses_a_domain_the_model_was_not_trained_with(folder, corpora, tmp_path, capsys):  # noqa: F811
    status = tune_rerank.main(["--model", str(folder), "--data-dir", f"legal={corpora[1]}", "--out",
                               str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert err.startswith("tune_rerank: --data-dir legal=...: the model was trained with the domains captions, "
                          "software")
    assert not (tmp_path / "r.json").exists()


# --------------------------------------------------------------------------- the results scripts
def test_domain_results_best_row_is_the_reranked_model_with_the_domain(folder, reranker, corpora,  # noqa: F811
                                                                        tmp_path):
    code = domain_results.main(["--model", f"v3={folder}", "--data-dir", f"captions={corpora[0]}", "--data-dir",
                                f"software={corpora[1]}", "--split", "captions=val", "--split", "software=val",
                                "--beam", "3", "--quality", "fast,best", "--limit", "6", "--no-pivot",
                                "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "r.json")])
    assert code == 0
    sources, references = read_lines(corpora[1] / "val.en.gz")[:6], read_lines(corpora[1] / "val.de.gz")[:6]
    expected = [r.text for r in best(RerankedModel(reranker), sources, "software")]
    cached = [json.loads(gzip.decompress(p.read_bytes())) for p in (tmp_path / "cache").glob("*.txt.gz")]
    assert expected in cached
    assert expected != [r.text for r in best(RerankedModel(reranker), sources, "captions")]
    found = json.loads((tmp_path / "r.json").read_text())["results"]
    got = {s["metric"]: s["value"] for s in found
           if s["model"] == "v3 best" and s["split"] == "software/val" and s["direction"] == "en-de"}
    assert got == pytest.approx({k: round(v, 2) for k, v in score(expected, references).items()}, abs=0.006)
