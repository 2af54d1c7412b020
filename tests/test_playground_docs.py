"""docs/playground.md: every number in it is ``python -m scripts.playground_lessons``'s, as its results.json holds."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.playground_lessons import COMMAND, markdown_tables, targets

ROOT = Path(__file__).resolve().parent.parent

DOC = ROOT / "docs" / "playground.md"
RESULTS = ROOT / "docs" / "playground" / "results.json"


@pytest.fixture(scope="module")
def report():
    return json.loads(RESULTS.read_text(encoding="utf-8"))


def test_the_doc_shows_the_results_tables(report):
    text = DOC.read_text(encoding="utf-8")
    for line in markdown_tables(report):
        assert line in text, line
    assert report["command"].startswith(COMMAND) and f"`{report['command']}`" in text


def test_the_targets_follow_from_the_runs(report):
    assert report["targets"] == targets(report["runs"], report["translate"])
    assert all(row["met"] for row in report["targets"]), [r for r in report["targets"] if not r["met"]]


def test_every_picture_is_there_and_shown(report):
    text = DOC.read_text(encoding="utf-8")
    for name in report["pictures"].values():
        assert (RESULTS.parent / name).is_file() and f"playground/{name}" in text
    assert set(report["pictures"]) == {"positions", "causal-mask", "heads", "warm-up", "number-to-words"}


def test_every_run_kept_its_budget(report):
    for key, run in report["runs"].items():
        final = run["final"]
        assert final["reason"] == "budget", key
        assert report["budget_seconds"] <= final["seconds"] < report["budget_seconds"] + 5, key


def test_the_warm_start_figures_are_the_benchmarks():
    """The "Starting a run" section quotes ``python -m benchmarks playground_start``'s results file."""
    start = json.loads((ROOT / "docs" / "playground" / "warm_start.json").read_text(encoding="utf-8"))
    text = DOC.read_text(encoding="utf-8")
    assert f"`{start['command']}`" in text
    for figure in (f"{start['cold_median_s']} s", f"{start['warm_median_s']} s", f"{start['ratio_cold_to_warm']}x",
                   f"{start['spare_rss_mib']:.0f} MiB", f"the {start['spares']} spares\n{start['spares_rss_mib']:.0f} MiB",
                   f"keeps {start['spares']} *spare*", f"trains {start['warm_up_steps']} throwaway steps",
                   f"used for {start['spare_idle_seconds']:g} s", f"{start['repeat']} times each",
                   f"machine of {start['cpus']} CPUs"):
        assert figure in text, figure
    assert start["warm_median_s"] < 3 and start["ratio_cold_to_warm"] > 1  # what the section says of them
