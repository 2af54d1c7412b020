"""The shipped reranker: rerank.json beside the multilingual model, named in its card, and the quality
table of docs/results.md is the results file that python -m scripts.rerank_results wrote."""
from pathlib import Path

import pytest

from helpers.docs import page, results_rows
from transformer_hub.hub import card_data_from_file
from transformer_hub.rerank import FEATURES, RERANK_FILE, RerankFile
from transformer_hub.hub.results import load as load_results

ROOT = Path(__file__).resolve().parent.parent
MULTILINGUAL = ROOT / "space" / "models" / "multilingual"
RESULTS = MULTILINGUAL / "rerank_results.json"
pytestmark = pytest.mark.skipif(not (MULTILINGUAL / RERANK_FILE).is_file(), reason="no shipped rerank.json")


def test_the_weights_cover_every_direction_and_were_tuned_on_val():
    tuned = RerankFile.load(MULTILINGUAL / RERANK_FILE)
    assert len(tuned.directions) == 12
    assert tuned.command.startswith("python -m scripts.tune_rerank --model space/models/multilingual")
    assert tuned.data.startswith("Multi30k val") and "test" not in tuned.data
    assert [(MULTILINGUAL / h).resolve() for h in tuned.helpers] == [(ROOT / "space" / "models" / "en-de").resolve()]
    for direction, w in tuned.directions.items():
        assert w.weights.get("forward") == 1.0 and set(w.weights) <= set(FEATURES), direction
        assert w.val["reranked_bleu_lowercase"] >= w.val["beam_bleu_lowercase"], direction
    assert tuned.directions["en-de"].search.union and not tuned.directions["fr-en"].search.union


def test_the_card_names_the_weights_file_and_the_results_command():
    card = card_data_from_file(str(MULTILINGUAL / "README.md"))
    assert RERANK_FILE in card["quality"] and "--quality best" in card["quality"]
    assert load_results(RESULTS).settings["command"] in card["quality"]


def test_the_results_page_table_is_the_results_file():
    saved = load_results(RESULTS)
    rows = results_rows("### The quality mode", width=11)
    assert len(rows) == 24
    column = {("beam 5", "bleu"): 0, ("beam 5", "bleu_lowercase"): 1, ("beam 5", "chrf"): 2,
              ("quality best", "bleu"): 3, ("quality best", "bleu_lowercase"): 4, ("quality best", "chrf"): 5}
    for s in saved.results:
        assert rows[s.split, s.direction][column[s.model, s.metric]] == f"{s.value:.2f}", s
    for direction, features in saved.settings["features"].items():
        assert rows["test_2016_flickr", direction][8] == ", ".join(features)
    text = page("results.md")
    assert f"{saved.settings['time_ratio']:.2f}x" in text[text.index("### The quality mode"):]
