"""docs/multilingual-v4-pilots.md is the table of its results file, as ``python -m scripts.pilots_v4 table`` writes it."""
import json
from pathlib import Path

from scripts.pilots_v4 import PILOTS, mean_bleu, table_page

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_page_is_the_table_of_its_results_file():
    results = json.loads((DOCS / "multilingual-v4-pilots.json").read_text())
    assert (DOCS / "multilingual-v4-pilots.md").read_text() == table_page(results["pilots"])
    for pilot in results["pilots"]:
        assert pilot["name"] in PILOTS and pilot["about"] == PILOTS[pilot["name"]]["about"]
        assert len(pilot["scores"]) == 18  # six English-side directions on each of the three domains
        assert "/work" not in pilot.get("command", "")  # the corpora named by their variables, not where they lie


def test_the_mean_is_over_the_domain_s_directions_only():
    pilot = {"scores": {"help/en-de": {"bleu": 10.0}, "help/de-en": {"bleu": 20.0}, "catalogs/en-de": {"bleu": 90.0}}}
    assert mean_bleu(pilot, "help") == 15.0 and mean_bleu(pilot, "catalogs") == 90.0
