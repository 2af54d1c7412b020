"""docs/results.md's statement of the default quality and its cost is docs/quality_latency.json's (``python -m benchmarks
quality``), and the default everywhere is the one that measurement chose."""
import inspect
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "quality_latency.json"


@pytest.fixture(scope="module")
def measured():
    return json.loads(RESULTS.read_text(encoding="utf-8"))


def test_the_results_page_states_the_measured_time_per_sentence_and_the_default(measured):
    page_text = " ".join((ROOT / "docs" / "results.md").read_text(encoding="utf-8").split())  # line breaks as spaces
    stated = (f"{measured['best_ms_per_sentence']:.1f} ms per sentence against {measured['fast_ms_per_sentence']:.1f}"
              f" ms ({measured['ratio_best_to_fast']:.2f}x)")
    assert stated in page_text
    assert f"the default is quality {measured['default']}" in page_text and measured["command"] in page_text
    assert f"budget of {measured['page_budget_ms_per_sentence']:.0f} ms per sentence" in page_text
    assert f"paragraphs of {measured['sentences_per_paragraph']} val sentences" in page_text.replace("three", "3")
    assert f"{measured['calls']['best']} calls of each mode interleaved" in page_text
    pairs = [d.replace("-", "→") for d in measured["directions"]]
    assert ", ".join(pairs[:-1]) + " and " + pairs[-1] in page_text


def test_the_benchmarks_page_table_is_the_measurement(measured):
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert f"| fast (beam 4) | {measured['fast_ms_per_sentence']:.1f} | 1.00 |" in text
    best, ratio = measured["best_ms_per_sentence"], measured["ratio_best_to_fast"]
    assert f"| best (reranked) | {best:.1f} | {ratio:.2f} |" in text


def test_the_measurement_is_interleaved_and_its_decision_follows_from_it(measured):
    assert measured["calls"]["fast"] == measured["calls"]["best"] == measured["paragraphs"] * measured["rounds"]
    fits = measured["best_ms_per_sentence"] <= measured["page_budget_ms_per_sentence"]
    assert measured["best_fits_page"] == fits and measured["default"] == ("best" if fits else "fast")
    assert measured["ratio_best_to_fast"] == pytest.approx(
        measured["best_ms_per_sentence"] / measured["fast_ms_per_sentence"], abs=0.01)  # rounded to 0.1 ms


def test_the_page_rest_and_cli_default_to_the_measured_choice(measured):
    from space.serving import quality, service
    from space.rest.schema import TranslateRequest
    from transformer_hub.text.pipeline import translate_texts

    box = inspect.signature(service.translate_view).parameters["quality"].default
    assert quality.quality_option(box) == measured["default"]
    assert TranslateRequest.model_fields["quality"].default == measured["default"]
    assert inspect.signature(translate_texts).parameters["quality"].default == measured["default"]
