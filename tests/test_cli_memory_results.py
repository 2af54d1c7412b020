"""``python -m benchmarks cli_memory``: its input cycles through the test sets, and docs/benchmarks.md quotes its
results file."""
import gzip
import json
from pathlib import Path

import pytest

from benchmarks import cli_memory
from helpers.docs import page

ROOT = Path(__file__).resolve().parents[1]


def test_the_input_takes_a_line_of_each_test_set_in_turn_and_starts_each_again(tmp_path, monkeypatch):
    for name, split, lines in (("cat", "test", ["Open file", "", "Save"]), ("help", "test", ["Choose Insert."]),
                               ("m30k", "test_2016_flickr", ["A dog runs."])):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{split}.en.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    monkeypatch.setenv("DEBIAN_CATALOGS", str(tmp_path / "cat"))
    monkeypatch.setenv("TRANSFORMER_HUB_LIBREOFFICE_HELP", str(tmp_path / "help"))
    monkeypatch.setenv("TRANSFORMER_HUB_DATA", str(tmp_path / "m30k"))
    assert cli_memory.input_lines(7) == ["Open file", "Choose Insert.", "A dog runs.", "Save", "Choose Insert.",
                                         "A dog runs.", "Open file"]
    monkeypatch.setenv("DEBIAN_CATALOGS", str(tmp_path / "nowhere"))
    with pytest.raises(SystemExit, match="cli_memory needs the debian-catalogs corpus"):
        cli_memory.input_lines(1)


def test_the_page_quotes_the_results_file():
    results = json.loads((ROOT / "docs" / "cli_memory.json").read_text())
    text = " ".join(page("benchmarks.md").split())
    assert results["command"] in text
    for row in results["rows"]:
        assert f"| {row['lines']:,} | {row['peak_rss_mb']:,.0f} MB | {row['seconds']:,.0f} s |" in text
        assert row["lines_out"] == row["lines"]  # one line out per line in
    assert f"{results['growth']:.2f}x the peak memory" in text
    assert results["within_target"] == (results["rows"][-1]["peak_rss_mb"] <= results["target_mb"])
