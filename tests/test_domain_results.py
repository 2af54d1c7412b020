"""scripts/domain_results.py: each model on each domain's test set, a tagged model reading its domain's tag, the
pivot through English, the targets' gaps, and the scores written into a card as both domains' tables."""
import gzip
import hashlib
import shutil
from pathlib import Path

import pytest

from scripts import domain_results
from test_domains import corpora, run_args, tagged  # noqa: F401 - the fixtures it builds on
from transformer_hub import Transformer
from transformer_hub.decoding import generate
from transformer_hub.hub import results as results_json
from transformer_hub.training.trainer import main as train
from transformer_hub.training.data import read_lines
from transformer_hub.training.metrics import score
from transformer_hub.text.pipeline import translate_texts

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def untagged(corpora, tmp_path_factory):  # noqa: F811
    out = tmp_path_factory.mktemp("untagged") / "run"
    assert train(run_args(out, corpora, "--max-updates", "2")) == 0
    return out / "final"


def run(tmp_path, untagged, tagged, corpora, *extra):  # noqa: F811
    captions, software = corpora
    out = tmp_path / "results.json"
    code = domain_results.main(["--model", f"v2={untagged}", "--model", f"v3={tagged / 'final'}",
                                "--data-dir", f"captions={captions}", "--data-dir", f"software={software}",
                                "--split", "captions=val", "--split", "software=val", "--beam", "2",
                                "--out", str(out), *extra])
    return code, out


def test_each_model_is_scored_on_each_domain_with_its_tag(tmp_path, untagged, tagged, corpora, capsys):  # noqa: F811
    code, out = run(tmp_path, untagged, tagged, corpora)
    assert code == 0
    found = results_json.load(out)
    v3 = Transformer.from_pretrained(tagged / "final")

    sources, references = read_lines(corpora[1] / "val.en.gz"), read_lines(corpora[1] / "val.de.gz")
    outputs = [r.text for r in generate(v3, sources, strategy="beam", beam_size=2, src_lang="en", tgt_lang="de",
                                        domain="software")]
    expected = score(outputs, references)
    got = {s.metric: s.value for s in found.results
           if s.model == "v3" and s.split == "software/val" and s.direction == "en-de"}
    assert got == pytest.approx({k: round(v, 2) for k, v in expected.items()}, abs=0.006)
    assert {s.split for s in found.results} == {"captions/val", "software/val"}
    assert {s.model for s in found.results} == {"v2", "v3"}  # en and de only: no pivot
    code, out = run(tmp_path, untagged, tagged, corpora, "--only", "v2=captions")
    assert {(s.model, s.split) for s in results_json.load(out).results} == {
        ("v2", "captions/val"), ("v3", "captions/val"), ("v3", "software/val")}
    table = capsys.readouterr().out
    assert "| software | en-de |" in table and "| 35.00 |" in table  # the software target of en-de
    assert "cased on the other domains" in table


def test_the_card_gets_both_domains_tables(tmp_path, untagged, tagged, corpora):  # noqa: F811
    folder = tmp_path / "v3"
    shutil.copytree(tagged / "final", folder)
    captions, software = corpora
    code = domain_results.main(["--model", f"v3={folder}", "--data-dir", f"captions={captions}",
                                "--data-dir", f"software={software}", "--split", "captions=val", "--split",
                                "software=val", "--beam", "1", "--limit", "8", "--out", str(tmp_path / "r.json"),
                                "--card", "v3"])
    assert code == 0
    card = Transformer.from_pretrained(folder).card_data
    kinds = {(r["dataset_type"], r["split"]) for r in card["results"]}
    assert {("multi30k", "val"), ("libreoffice-help", "val")} <= kinds
    assert "come from `python -m scripts.domain_results --model v3=" in card["provenance"]
    text = (folder / "README.md").read_text()
    assert "LibreOffice help" in text and "Multi30k" in text
    assert not any("[:" in r["split"] for r in card["results"])  # no slice asked, none written
    code = domain_results.main(["--model", f"v3={folder}", "--data-dir", f"software={software}", "--split",
                                "software=val", "--beam", "1", "--limit", "8", "--slice", "4",
                                "--out", str(tmp_path / "r.json"), "--card", "v3"])
    card = Transformer.from_pretrained(folder).card_data
    sliced = {(r["split"], r["direction"], r["metric_name"]): r["value"] for r in card["results"]
              if r["split"] == "val[:4]"}
    saved = results_json.load(tmp_path / "r.json")
    assert sliced == {("val[:4]", s.direction, results_json.METRICS[s.metric]): s.value for s in saved.results
                      if s.model == "v3" and s.split == "software/val[:4]"} and len(sliced) == 6
    assert ("multi30k", "val") in {(r["dataset_type"], r["split"]) for r in card["results"]}  # the other domain kept


@pytest.mark.parametrize("args, message", [
    (["--model", "v3=/nonexistent"], "--model v3=/nonexistent: not a model folder"),
    (["--card", "v9"], "--card v9: not one of the --model names"),
    (["--only", "v9=captions"], "--only v9: not one of the --model names"),
    (["--quality", "fast,great"], "--quality: unknown great"),
    (["--workers", "0"], "--workers 0: at least 1"),
])
def test_a_mistake_is_one_line(tmp_path, tagged, corpora, capsys, args, message):  # noqa: F811
    base = {"--model": f"v3={tagged / 'final'}", "--data-dir": f"captions={corpora[0]}", "--out": str(tmp_path / "r")}
    given = dict(zip(args[::2], args[1::2]))
    argv = [x for k, v in {**base, **given}.items() for x in (k, v)]
    assert domain_results.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"domain_results: {message}") and err.count("\n") == 1


def test_a_cached_run_decodes_nothing_again_and_scores_the_same(tmp_path, untagged, tagged, corpora,  # noqa: F811
                                                                monkeypatch):
    cache = tmp_path / "cache"
    code, out = run(tmp_path, untagged, tagged, corpora, "--cache", str(cache), "--limit", "6")
    assert code == 0 and len(list(cache.glob("*.txt.gz"))) == 8  # 2 domains x 2 models x (en-de, de-en)
    first = results_json.load(out).results

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded although every output was cached")

    monkeypatch.setattr(domain_results, "translate_texts", no_decoding)
    code, out = run(tmp_path, untagged, tagged, corpora, "--cache", str(cache), "--limit", "6")
    assert code == 0 and results_json.load(out).results == first


def test_new_weights_never_reuse_cached_outputs(tmp_path, untagged, tagged, corpora):  # noqa: F811
    cache = tmp_path / "cache"
    assert run(tmp_path, untagged, tagged, corpora, "--cache", str(cache), "--limit", "4")[0] == 0
    folder = tmp_path / "v2"
    shutil.copytree(untagged, folder)
    model = Transformer.from_pretrained(folder)
    for p in model.parameters():
        p.data.mul_(0.5)
    model.save_pretrained(folder)
    code = domain_results.main(["--model", f"v2={folder}", "--data-dir", f"captions={corpora[0]}",
                                "--split", "captions=val", "--beam", "2", "--limit", "4", "--cache", str(cache),
                                "--out", str(tmp_path / "again.json")])
    assert code == 0 and len(list(cache.glob("*.txt.gz"))) == 10  # the halved weights' two directions are new


def test_workers_give_the_same_scores(tmp_path, untagged, tagged, corpora):  # noqa: F811
    one = run(tmp_path / "one", untagged, tagged, corpora, "--limit", "6")
    two = run(tmp_path / "two", untagged, tagged, corpora, "--limit", "6", "--workers", "2")
    assert one[0] == two[0] == 0
    assert results_json.load(one[1]).results == results_json.load(two[1]).results


def test_a_slice_records_the_first_sentences_scores(tmp_path, untagged, tagged, corpora):  # noqa: F811
    code, out = run(tmp_path, untagged, tagged, corpora, "--slice", "5")
    assert code == 0
    found = results_json.load(out)
    v3 = Transformer.from_pretrained(tagged / "final")
    sources, references = read_lines(corpora[1] / "val.de.gz")[:5], read_lines(corpora[1] / "val.en.gz")[:5]
    outputs = [r.text for r in generate(v3, sources, strategy="beam", beam_size=2, src_lang="de", tgt_lang="en",
                                        domain="software")]
    got = {s.metric: s.value for s in found.results
           if s.model == "v3" and s.split == "software/val[:5]" and s.direction == "de-en"}
    assert got == pytest.approx({k: round(v, 2) for k, v in score(outputs, references).items()}, abs=0.006)
    assert found.settings["slice"] == 5
    digest = hashlib.sha256((corpora[1] / "val.de.gz").read_bytes()).hexdigest()
    assert found.settings["test_files"]["software/val.de.gz"] == digest
    assert set(found.settings["test_files"]) == {f"{d}/val.{lang}.gz" for d in ("captions", "software")
                                                 for lang in ("en", "de")}


def test_the_quality_mode_is_scored_on_the_slice_alone(tmp_path, capsys):
    """The shipped v2 with its tuned reranker on a two-language corpus: "best" on the first 3 sentences only,
    beside the beam on the same 3, both as the library gives them."""
    from transformer_hub.rerank import RerankedModel

    shipped = ROOT / "space" / "models" / "multilingual"
    corpus = tmp_path / "captions"
    corpus.mkdir()
    en = ["A dog runs in the snow.", "Two men play football.", "A woman reads a book.", "A child eats."]
    de = ["Ein Hund rennt im Schnee.", "Zwei Männer spielen Fußball.", "Eine Frau liest ein Buch.", "Ein Kind isst."]
    for lang, lines in (("en", en), ("de", de)):
        (corpus / f"val.{lang}.gz").write_bytes(gzip.compress("".join(f"{x}\n" for x in lines).encode()))
    out = tmp_path / "r.json"
    assert domain_results.main(["--model", f"v2={shipped}", "--data-dir", f"captions={corpus}", "--split",
                                "captions=val", "--quality", "fast,best", "--slice", "3", "--out", str(out)]) == 0
    found = results_json.load(out)
    best = {(s.split, s.direction, s.metric): s.value for s in found.results if s.model == "v2 best"}
    assert {k[0] for k in best} == {"captions/val[:3]"}  # never on the whole split
    reranked = RerankedModel.from_pretrained(shipped)
    outputs = [r.text for r in translate_texts(reranked, en[:3], src_lang="en", tgt_lang="de", split_sentences=False,
                                               quality="best")]
    expected = score(outputs, de[:3])
    assert best["captions/val[:3]", "en-de", "bleu"] == pytest.approx(round(expected["bleu"], 2), abs=0.006)
    table = capsys.readouterr().out
    assert 'The quality mode ("best") against the beam on the first 3 sentences' in table
    assert domain_results.main(["--table", str(out)]) == 0 and capsys.readouterr().out.strip() in table


def test_table_prints_a_results_files_tables_as_the_run_did(tmp_path, untagged, tagged, corpora, capsys):  # noqa: F811
    code, out = run(tmp_path, untagged, tagged, corpora, "--slice", "4")
    printed = capsys.readouterr().out
    assert code == 0 and domain_results.main(["--table", str(out)]) == 0
    again = capsys.readouterr().out
    assert again.strip() and again.strip() in printed


def test_catalogs_are_read_as_software_and_scored_by_entry_length(tmp_path, tagged, capsys):  # noqa: F811
    """Debian's catalogs: the software tag (the model knows no catalogs domain), all entries, then those of 3+
    English words and of 1-2 words apart, each the score of the same outputs' subset; an entry one language lacks
    is in neither of its directions."""
    en = ["click the menu", "save", "open file", "select the cell format table", "help", "window list tab"]
    de = ["klicken das Menü", "speichern", "öffnen Datei", "wählen das Zelle Format Tabelle", "Hilfe",
          "Fenster Liste Reiter"]
    folder = tmp_path / "catalogs"
    folder.mkdir()
    untranslated = {"en": ["close all open windows"], "de": [""]}  # an entry without German: in neither direction
    for lang, lines in (("en", en), ("de", de)):
        lines = lines + untranslated[lang]
        (folder / f"test.{lang}.gz").write_bytes(gzip.compress("".join(f"{x}\n" for x in lines).encode()))
    out = tmp_path / "r.json"
    assert domain_results.main(["--model", f"v3={tagged / 'final'}", "--data-dir", f"catalogs={folder}",
                                "--beam", "2", "--out", str(out)]) == 0
    found = results_json.load(out)
    v3 = Transformer.from_pretrained(tagged / "final")
    for src, tgt, sources, references in (("en", "de", en, de), ("de", "en", de, en)):
        outputs = [r.text for r in generate(v3, sources, strategy="beam", beam_size=2, src_lang=src, tgt_lang=tgt,
                                            domain="software")]
        for split, picked in (("test", range(6)), ("test:3+words", [0, 3, 5]), ("test:1-2words", [1, 2, 4])):
            expected = score([outputs[i] for i in picked], [references[i] for i in picked])
            got = {s.metric: s.value for s in found.results
                   if s.split == f"catalogs/{split}" and s.direction == f"{src}-{tgt}"}
            assert got == pytest.approx({k: round(v, 2) for k, v in expected.items()}, abs=0.006), split
    assert set(found.settings["test_files"]) == {"catalogs/test.en.gz", "catalogs/test.de.gz"}
    table = capsys.readouterr().out
    assert "| catalogs/test:3+words | en-de |" in table and "entries whose English has 3 or more words" in table
    assert domain_results.main(["--table", str(out)]) == 0 and capsys.readouterr().out.strip() in table


def test_v4_targets_are_fixed_on_long_catalog_entries_and_relative_to_v3_elsewhere():
    from scripts.results_table import target_of

    names = ["v2", "v3", "v4"]
    scores = {"v2": {"bleu": 40.0, "bleu_lowercase": 42.0}, "v3": {"bleu": 20.0, "bleu_lowercase": 38.5},
              "v4": {"bleu": 24.0, "bleu_lowercase": 39.0}, "v4 via en": {"bleu": 10.0}}

    def row(domain, split, direction):
        return {"domain": domain, "split": split, "direction": direction, **scores}
    assert target_of(row("catalogs", "test:3+words", "en-fr"), names, "v4") == ("bleu", 35.0)
    assert target_of(row("catalogs", "test:1-2words", "en-fr"), names, "v4") == ("bleu", 10.0)  # the pivot
    assert target_of(row("software", "test", "de-fr"), names, "v4") == ("bleu", 23.0)  # v3 + 3, all 12
    assert target_of(row("captions", "test_2016_flickr", "en-de"), names, "v4") == ("bleu_lowercase", 38.5)
    assert target_of(row("captions", "test_2016_flickr", "de-fr"), names, "v4") is None
    assert target_of(row("captions", "test_2016_flickr", "en-de"), names, "v3") == ("bleu_lowercase", 41.7)
    assert target_of(row("software", "test", "en-cs"), names, "v3") == ("bleu", 30.0)
