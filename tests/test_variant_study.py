"""scripts/variant_study.py: every variant on one budget, results.json for the Space, shipped models, plot, resume.

One toy study (preset ``tiny``, 3 updates, 300 training pairs, 20 val/test pairs, beam 2) runs once per module
on a synthetic corpus in Multi30k's layout (the same on every machine, whether the corpus is beside it or not).
"""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from helpers.corpus import synthetic_pairs
from scripts import variant_study as study
from space.serving.model_store import ModelStore
from transformer_hub import Transformer, TransformerConfig
from transformer_hub.hub import results as results_json

ROOT = Path(__file__).resolve().parent.parent

UPDATES = 3
ALL = ["paper", "learned-pos", "pre-norm", "modern", "decoder-only", "paper-seed2"]
PARTS = {"paper": ("encoder-decoder", "sinusoidal", "post", "relu"),
         "learned-pos": ("encoder-decoder", "learned", "post", "relu"),
         "pre-norm": ("encoder-decoder", "sinusoidal", "pre", "relu"),
         "modern": ("encoder-decoder", "rope", "pre", "swiglu"),
         "decoder-only": ("decoder-only", "sinusoidal", "post", "relu"),
         "paper-seed2": ("encoder-decoder", "sinusoidal", "post", "relu")}


def data_dir(tmp: Path) -> Path:
    """Synthetic train/val/test_2016_flickr files in Multi30k's layout (the same on every machine)."""
    folder = tmp / "corpus"
    folder.mkdir()
    for split, (n, seed) in {"train": (300, 0), "val": (20, 1), "test_2016_flickr": (20, 2)}.items():
        pairs = synthetic_pairs(n, seed)
        for lang, side in (("en", 0), ("de", 1)):
            with gzip.open(folder / f"{split}.{lang}.gz", "wt", encoding="utf-8") as fh:
                fh.write("\n".join(p[side] for p in pairs) + "\n")
    return folder


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("study")
    argv = ["--out", str(tmp / "study"), "--ship-to", str(tmp / "ship"), "--data-dir", str(data_dir(tmp)),
            "--preset", "tiny", "--max-len", "160", "--max-updates", str(UPDATES), "--max-tokens", "600",
            "--warmup", "2", "--vocab-size", "1000", "--limit", "300", "--valid-limit", "20", "--test-limit", "20",
            "--final-beam", "2", "--threads", "1"]
    assert study.main(argv) == 0
    return tmp, argv, results_json.load(tmp / "ship" / "results.json")


def test_decoder_only_matches_paper_parameters():
    for preset, vocab in (("cpu", 8000), ("cpu", 10000), ("tiny", 400)):
        paper = study.variant_config(preset, vocab, study.plan([1])["paper"])
        dec = study.variant_config(preset, vocab, study.plan([1])["decoder-only"])
        assert dec.layout == "decoder-only" and dec.n_encoder_layers == 0
        assert abs(dec.num_parameters() - paper.num_parameters()) <= 0.10 * paper.num_parameters()
        assert Transformer(dec).num_parameters() == dec.num_parameters()  # the count is the real one
    assert study.variant_config("cpu", 8000, study.plan([1])["decoder-only"]).n_decoder_layers == 10
    paper = study.variant_config("cpu", 8000, study.plan([1])["paper"])
    assert (paper.d_model, paper.n_heads, paper.d_ff, paper.n_encoder_layers, paper.n_decoder_layers,
            paper.dropout, paper.share_embeddings) == (128, 4, 256, 4, 4, 0.3, True)


@pytest.mark.slow
def test_results_have_every_variant_on_one_budget(toy):
    tmp, _, report = toy
    budget, rows = report.settings, {m.name: m for m in report.models}
    assert list(rows) == ALL and budget["updates"] == UPDATES and budget["beam"] == 2
    text = (tmp / "ship" / "results.json").read_text()
    assert str(tmp) not in text and "data_dir" not in text  # no machine paths (the schema refuses them)
    for name, r in rows.items():
        a = r.architecture
        assert (a["layout"], a["positional"], a["norm"], a["feed_forward"]) == PARTS[name]
        assert (a["d_model"], a["n_heads"], a["d_ff"]) == (32, 4, 64)
        assert r.training["seed"] == (2 if name == "paper-seed2" else 1)
        # the budget: the same updates, read back from the Trainer's own results.json (the same schema)
        trainer = results_json.load(tmp / "study" / name / "results.json").models[0].training
        assert r.training["updates"] == trainer["updates"] == UPDATES
        assert r.training["train_seconds"] > 0 and r.training["train_tokens_per_s"] > 0
        assert r.decoding["sentences_per_s"] > 0 and r.decoding["sentences"] == 20 and r.decoding["beam"] == 2
        for split in ("val", "test_2016_flickr"):
            for metric in ("bleu", "bleu_lowercase", "chrf"):
                assert 0 <= report.score(name, metric, split, "en-de") <= 100
        cfg = TransformerConfig.from_json_file(str(tmp / "study" / name / "final" / "config.json"))
        assert r.parameters == cfg.num_parameters()
    # same tokenizer, seed and batches: every seed-1 variant saw exactly the same target tokens
    assert len({r.training["train_tokens"] for n, r in rows.items() if n != "paper-seed2"}) == 1
    assert len({r.training["train_pairs"] for r in rows.values()}) == 1
    paper, dec = rows["paper"].parameters, rows["decoder-only"].parameters
    assert abs(dec - paper) <= 0.10 * paper and rows["decoder-only"].architecture["n_encoder_layers"] == 0
    spm = {(tmp / "study" / n / "tokenizer" / "spm.model").read_bytes() for n in ALL}
    assert spm == {(tmp / "study" / "tokenizer" / "spm.model").read_bytes()}


@pytest.mark.slow
def test_shipped_models_plot_and_table(toy):
    tmp, _, report = toy
    ship = tmp / "ship"
    for r in report.models:
        if r.name == "paper-seed2":
            assert r.path is None and not (ship / "paper-seed2").exists()
            continue
        assert r.path == r.name  # relative to the results file's folder
        model = Transformer.from_pretrained(str(ship / r.path))
        c = model.config
        assert (c.layout, c.positional, c.norm, c.feed_forward) == PARTS[r.name]
        assert model.num_parameters() == r.parameters and model.tokenizer is not None
        assert "variant study" in (ship / r.name / "README.md").read_text()
    png = (ship / "validation_curves.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    table = (ship / "results.md").read_text()
    assert all(f"| {name} |" in table for name in ALL) and f"{UPDATES} updates" in table
    shutil.copytree(ship, tmp / "space_models" / "variants")  # the Space reads it as models/variants
    store = ModelStore(models_dir=tmp / "space_models")
    assert {f"variants/{n}" for n in ALL[:-1]} <= set(store.names())
    assert [m.name for m in store.results().models] == [f"variants/{n}" for n in ALL]


def test_the_shipped_results_json_follows_the_schema():
    shipped = results_json.load(ROOT / "space" / "models" / "variants" / "results.json")
    for m in shipped.models:
        assert m.path is None or (ROOT / "space" / "models" / "variants" / m.path / "config.json").is_file()
    assert shipped.score("modern", "bleu", "test_2016_flickr", "en-de") == 35.34


@pytest.mark.parametrize("change, message", [
    (lambda d: d["models"][0].update(path="/home/me/runs/paper"), "absolute path"),
    (lambda d: d["settings"].update(data_dir="C:\\data"), "absolute path"),
    (lambda d: d["results"][0].update(metric="bleu4"), "metric 'bleu4'"),
    (lambda d: d["results"][0].update(model="nope"), "not one of the models"),
    (lambda d: d["results"][0].update(direction="english-german"), "not 'src-tgt'"),
    (lambda d: d.update(schema=2), "schema 2"),
    (lambda d: d["models"][0].update(extra=1), "unknown keys"),
])
def test_the_schema_refuses_what_it_does_not_define(tmp_path, change, message):
    good = results_json.Results(models=[results_json.ModelResult("paper", path="paper", parameters=3)],
                                results=[results_json.Score("paper", "val", "bleu", 1.0, "en-de")],
                                settings={"updates": 3})
    data = good.to_dict()
    results_json.validate(data)
    change(data)
    with pytest.raises(ValueError, match=message):
        results_json.validate(data)
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=message):
        results_json.load(tmp_path / "r.json")


@pytest.mark.slow
def test_rerun_skips_finished_variants(toy, monkeypatch):
    tmp, argv, report = toy
    monkeypatch.setattr(study, "Trainer", lambda *a, **k: pytest.fail("a finished variant was trained again"))
    assert study.main(argv) == 0
    assert results_json.load(tmp / "ship" / "results.json") == report
    with pytest.raises(SystemExit, match="another budget"):  # the same --out on another budget is refused
        study.main([a if a != str(UPDATES) else "4" for a in argv])
    with pytest.raises(SystemExit, match="pass --max-len"):  # decoder-only would drop long pairs: refused up front
        study.main([a if a != "160" else "64" for a in argv])


@pytest.mark.slow
def test_interrupted_variant_resumes_exactly(toy, tmp_path, monkeypatch):
    tmp, argv, report = toy
    where = {"--out": str(tmp_path / "study"), "--ship-to": str(tmp_path / "ship")}
    argv = [where.get(prev, a) for prev, a in zip([None] + argv, argv)] + ["--variants", "paper"]
    shutil.copytree(tmp / "study" / "tokenizer", tmp_path / "study" / "tokenizer")  # the toy study's vocabulary
    trainer = study.Trainer

    class StoppedAfterTwo(trainer):  # what SIGINT does: finish the update, checkpoint, return None
        def _done(self) -> bool:
            self.stop.requested = self.stop.requested or self.run.state.step == 2
            return super()._done()

    monkeypatch.setattr(study, "Trainer", StoppedAfterTwo)
    assert study.main(argv) == 130
    run = tmp_path / "study" / "paper"
    assert not (run / study.RECORD).exists() and not (tmp_path / "ship" / "paper").exists()
    monkeypatch.setattr(study, "Trainer", trainer)
    assert study.main(argv) == 0  # resumes from the step-2 checkpoint
    row = json.loads((run / study.RECORD).read_text())
    paper = report.model("paper")
    assert row["updates"] == UPDATES and row["train_tokens"] == paper.training["train_tokens"]  # the same batches
    assert [m["step"] for m in study.MetricsLog(run / "metrics.jsonl").read() if m["kind"] == "val"] == [2, 3]
    shipped = results_json.load(tmp_path / "ship" / "results.json")
    assert [m.name for m in shipped.models] == ["paper"]
