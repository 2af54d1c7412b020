"""The best model for each direction: read from the model cards (transformer_hub.hub.selection), used by the Space."""
from __future__ import annotations

import argparse
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

from transformer_hub.hub.selection import best_model, best_models, candidate, candidates_in


def _result(direction, value, split="test_2016_flickr", name="sacreBLEU (lowercased)"):
    entry = {"split": split, "metric": "bleu", "metric_name": name, "value": value}
    return {**entry, "direction": direction} if direction else entry


@pytest.fixture
def two_models(tmp_path, make_model):
    """``multi`` (en, de, fr) and ``pair`` (en->de): the cards score en->de 30.0 and 35.5, en->fr only ``multi``."""
    multi = make_model(src_lang=None, tgt_lang=None, languages=["en", "de", "fr"])
    multi.card_data = {"results": [_result("en-de", 30.0), _result("en-fr", 25.0),
                                    _result("en-de", 99.0, split="val"),            # another split: not read
                                    _result("en-de", 99.0, name="chrF")]}           # another metric: not read
    multi.save_pretrained(tmp_path / "multi")
    pair = make_model()
    pair.card_data = {"results": [_result(None, 35.5)]}  # a bilingual card names no direction: its one pair
    pair.save_pretrained(tmp_path / "pair")
    return tmp_path


def test_the_best_scored_model_serves_each_direction(two_models):
    found = candidates_in(two_models)
    assert [c.name for c in found] == ["multi", "pair"]
    assert found[0].scores == {("en", "de"): 30.0, ("en", "fr"): 25.0} and found[1].scores == {("en", "de"): 35.5}
    assert best_model(found, "en", "de").name == "pair"        # 35.5 > 30.0
    assert best_model(found, "en", "fr").name == "multi"       # only it serves en->fr
    assert best_model(found, "de", "fr").name == "multi"       # served, unscored: the fallback
    assert best_model(found, "en", "cs") is None
    assert best_models(found)[("en", "de")] == "pair" and best_models(found)[("fr", "de")] == "multi"


def test_a_scored_model_beats_an_unscored_one_and_order_breaks_ties(make_model):
    config = make_model().config
    unscored, low = candidate("a", config, {}), candidate("b", config, {"results": [_result(None, 1.0)]})
    assert best_model([unscored, low], "en", "de").name == "b"
    same = candidate("c", config, {"results": [_result(None, 1.0)]})
    assert best_model([low, same], "en", "de").name == "b" and best_model([same, low], "en", "de").name == "c"
    broken = candidate("d", config, {"results": [{"split": "test_2016_flickr"}]})  # unreadable entries: no scores
    assert broken.scores == {} and broken.serves("en", "de")


def test_the_space_picks_the_better_model_per_direction_and_names_it(two_models):
    from space.serving.context import SpaceContext
    from space.serving.model_store import ModelStore
    from space.serving.service import pick_model

    ctx = SpaceContext(ModelStore(two_models))
    assert ctx.store.default() == "multi"  # the page's default model (most directions) ...
    assert pick_model(ctx, None, "en", "de") == "pair" and pick_model(ctx, "auto", "en", "de") == "pair"
    assert pick_model(ctx, "auto", "en", "fr") == "multi"    # ... but en->de goes to the better-scored one
    assert pick_model(ctx, "multi", "en", "de") == "multi"   # a visitor's choice stands
    assert ctx.chooser.table()[("en", "de")] == "pair"


def test_the_shipped_models_default_per_direction():
    shipped = ROOT / "space" / "models"
    if not (shipped / "en-de").is_dir() or not (shipped / "multilingual").is_dir():
        pytest.skip("the shipped models are not in this checkout")
    table = best_models(candidates_in(shipped))
    # the cards: en-de 41.53 (bilingual) against 40.47 (multilingual) lowercased BLEU on test_2016_flickr
    assert table[("en", "de")] == "en-de" and table[("en", "fr")] == "multilingual" and len(table) == 12


def test_the_cli_without_model_translates_with_the_best_model_of_the_folder(two_models, monkeypatch, capsys):
    from transformer_hub import Transformer, cli
    from transformer_hub.cli.options import MODELS_DIR_ENV, best_model_for

    source = two_models / "input.en"
    source.write_text("A dog runs.\n", encoding="utf-8")
    monkeypatch.setenv(MODELS_DIR_ENV, str(two_models))
    out = two_models / "out.de"
    assert cli.main(["translate", "--src-lang", "en", "--tgt-lang", "de", "--strategy", "greedy",
                     "--max-length", "5", "--input", str(source), "--output", str(out)]) == 0
    assert f"model: {two_models / 'pair'} (the best measured for en->de" in capsys.readouterr().err
    model = Transformer.from_pretrained(two_models / "pair")
    expected = model.translate(["A dog runs."], strategy="greedy", max_length=5)[0]
    assert out.read_text(encoding="utf-8") == expected + "\n"
    # (the test's multilingual model has no language tags to translate with: its choice is checked alone)
    assert best_model_for(argparse.Namespace(src_lang="en", tgt_lang="fr")) == str(two_models / "multi")
    assert cli.main(["translate", "--src-lang", "en", "--tgt-lang", "cs", "--input", str(source)]) == 2
    assert "no model in" in capsys.readouterr().err
    assert cli.main(["translate", "--input", str(source)]) == 2
    assert "without --model, give --src-lang and --tgt-lang" in capsys.readouterr().err


def test_the_cli_with_auto_and_no_model_sends_each_line_to_its_directions_model(tmp_path, make_model, monkeypatch,
                                                                                   capsys):
    """``--src-lang auto`` without ``--model``: the pipeline detects each line and picks its direction's model
    (an English line to the en->de model, a French one to the fr->de model), as the library's ModelSet does."""
    from transformer_hub import Transformer, cli

    make_model().save_pretrained(tmp_path / "models" / "en-de")
    make_model(src_lang="fr", seed=1).save_pretrained(tmp_path / "models" / "fr-de")
    lines = ["A man is riding a bicycle down the street.",
             "Un homme descend la rue à vélo et un chien court derrière lui."]
    source = tmp_path / "input.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv("TRANSFORMER_HUB_SPACE_MODELS", str(tmp_path / "models"))
    out = tmp_path / "out.jsonl"
    assert cli.main(["translate", "--src-lang", "auto", "--tgt-lang", "de", "--strategy", "greedy", "--max-length",
                     "5", "--json", "--input", str(source), "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "(the best measured for en->de)" in err and "(the best measured for fr->de)" in err
    import json

    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["src_lang"] for r in rows] == ["en", "fr"]
    for row, line, folder in zip(rows, lines, ("en-de", "fr-de")):
        model = Transformer.from_pretrained(tmp_path / "models" / folder)
        assert row["text"] == model.translate([line], strategy="greedy", max_length=5)[0]
