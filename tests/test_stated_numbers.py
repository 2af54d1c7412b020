"""Every table docs/ and the model cards show about the shipped models is read from their records:
the results files (``multilingual_results.json``, ``variants/results.json``) and, for ``en-de``, its card's
model-index (what its training run wrote).  A retrain that forgets a figure fails here."""
import re
from pathlib import Path

import pytest

from helpers.docs import page
from scripts import multilingual_v2 as mr
from transformer_hub.hub import card_data_from_file
from transformer_hub.hub.results import METRICS, load

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "space" / "models"
RESULTS = page("results.md")  # the shipped models, their tables and the prose around them
SPACE = page("space.md")
METRIC_OF = {name: key for key, name in METRICS.items()}
CARDS = sorted(p.parent for p in MODELS.rglob("README.md") if (p.parent / "config.json").is_file())


def table_rows(text: str, header: str) -> list:
    """The cells of the markdown table under ``header`` (its first line), as lists of stripped strings."""
    start = text.index(header)
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_the_results_page_multilingual_table_is_what_its_script_writes_from_the_results_file():
    """All nine columns: the scores, the pivot's and the bilingual model's, the target and gap, the published."""
    saved = load(MODELS / "multilingual" / "multilingual_results.json")
    rows = {}
    kinds = {"multilingual": "multilingual", "multilingual via en": "pivot", "bilingual": "bilingual"}
    for s in saved.results:
        row = rows.setdefault((s.split, s.direction), {"split": s.split, "direction": s.direction})
        row.setdefault(kinds[s.model], {})[s.metric] = s.value
    table = mr.markdown(list(rows.values()))
    assert table in RESULTS
    assert len(rows) == 24


def test_the_results_page_en_de_table_is_the_cards_record():
    card = card_data_from_file(str(MODELS / "en-de" / "README.md"))
    recorded = {(r["split"], METRIC_OF[r["metric_name"]]): r["value"] for r in card["results"]}
    rows = table_rows(RESULTS, "| split | BLEU (cased) | BLEU (lowercased) | chrF |")
    assert [r[0] for r in rows] == ["val", "test_2016_flickr", "test_2017_flickr", "test_2017_mscoco"]
    for split, *cells in rows:
        shown = [float(c.strip("*")) for c in cells]
        assert shown == [recorded[split, m] for m in ("bleu", "bleu_lowercase", "chrf")], split


def test_the_figures_the_docs_quote_for_the_default_choice_are_the_cards():
    """The en->de choice: the bilingual card's 41.53 against the multilingual card's 40.47."""
    pair = card_data_from_file(str(MODELS / "en-de" / "README.md"))
    multi = card_data_from_file(str(MODELS / "multilingual" / "README.md"))

    def lowercased(card, direction=None):
        return next(r["value"] for r in card["results"] if r["split"] == "test_2016_flickr"
                    and r["metric_name"] == METRICS["bleu_lowercase"] and r.get("direction") in (direction, None))

    assert f"`en-de` ({lowercased(pair):.2f})" in SPACE
    assert f"the bilingual `space/models/en-de`, {lowercased(pair):.2f}," in RESULTS
    from transformer_hub.hub import selection
    assert f"({lowercased(pair):.2f} against {lowercased(multi, 'en-de'):.2f})" in selection.__doc__


@pytest.mark.parametrize("folder", CARDS, ids=[str(c.relative_to(MODELS)) for c in CARDS])
def test_each_cards_results_table_is_its_model_index(folder):
    """The table a reader sees in a card and the YAML the Hub reads carry the same numbers."""
    text = (folder / "README.md").read_text(encoding="utf-8")
    card = card_data_from_file(str(folder / "README.md"))
    if not card.get("results"):
        pytest.skip(f"{folder.name}'s card states no results")
    header = next(line for line in text.splitlines() if line.startswith("| dataset | split |"))
    columns = [c.strip() for c in header.strip().strip("|").split("|")]
    first = 3 if columns[2] == "direction" else 2  # older cards name no direction (their one pair)
    shown = {}
    for row in table_rows(text, header):
        split, direction, cells = row[1], row[2].replace(" → ", "-") if first == 3 else None, row[first:]
        if columns[first:] == ["metric", "value"]:  # one row per metric
            shown[split, direction, cells[0]] = float(cells[1])
        else:  # one column per metric
            shown.update({(split, direction, m): float(c) for m, c in zip(columns[first:], cells) if c})
    recorded = {(r["split"], r.get("direction"), r["metric_name"]): r["value"] for r in card["results"]}
    assert len(shown) == len(recorded)
    for (split, direction, metric), value in recorded.items():
        matches = [v for (s, d, m), v in shown.items() if s == split and m == metric and direction in (None, d)]
        assert matches and all(v == value for v in matches), (split, direction, metric)


def test_the_variant_study_tables_are_its_results_file():
    saved = load(MODELS / "variants" / "results.json")
    score = {(s.model, s.split, s.metric): s.value for s in saved.results}
    for text in ((ROOT / "docs" / "variant-study.md").read_text(encoding="utf-8"),
                 (MODELS / "variants" / "results.md").read_text(encoding="utf-8")):
        rows = table_rows(text, "| variant | layout |")
        assert [r[0] for r in rows] == [m.name for m in saved.models]
        header = [c.strip() for c in text[text.index("| variant | layout |"):].splitlines()[0].strip("|").split("|")]
        columns = {"val BLEU": ("val", "bleu"), "val chrF": ("val", "chrf"),
                   "test16 BLEU": ("test_2016_flickr", "bleu"), "test16 chrF": ("test_2016_flickr", "chrf")}
        for row in rows:
            for name, (split, metric) in columns.items():
                assert float(row[header.index(name)]) == score[row[0], split, metric], (row[0], name)


def test_every_two_decimal_figure_of_the_results_page_tables_has_a_record():
    """No score in docs/results.md's tables that no results file or card holds (targets and gaps excepted)."""
    recorded = set()
    for path in (MODELS / "multilingual" / "multilingual_results.json", MODELS / "variants" / "results.json"):
        recorded |= {f"{s.value:.2f}" for s in load(path).results}
    for folder in CARDS:
        recorded |= {f"{r['value']:.2f}" for r in card_data_from_file(str(folder / "README.md")).get("results", [])}
    recorded |= {f"{value:.2f}" for value, _ in mr.ANCHORS.values()}
    for header in ("| split | direction | BLEU | BLEU (lc) |", "| split | BLEU (cased) | BLEU (lowercased) | chrF |"):
        for row in table_rows(RESULTS, header):
            cells = [re.sub(r" \(.*\)$", "", c).strip("*") for c in row[2 if "direction" in header else 1:]]
            scores = cells[:5] if "direction" in header else cells
            assert all(c in recorded for c in scores if c), row


def test_the_inside_views_tables_are_the_benchmarks_results_file():
    """docs/benchmarks.md's table of the Inside views and its comparison of the static and the interactive
    attention pictures are what ``python -m benchmarks inside`` wrote to docs/inside_benchmark.json (the tables
    rebuilt from the file), and the prose's claim follows from it: browser's drawing counted, no picture is slower."""
    import json

    from benchmarks import inside_table

    report = json.loads((ROOT / "docs" / "inside_benchmark.json").read_text(encoding="utf-8"))
    docs = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert inside_table.markdown(report) in docs and inside_table.views_markdown(report) in docs
    assert f"`{report['command']}`" in docs
    assert all(row["with_browser"]["ratio"] < 1.0 for row in report["figures"].values())


def test_the_hosting_pages_hostile_documents_section_is_the_benchmarks_results_file():
    """docs/hosting.md's table of hostile uploads and its /suggest flood are what ``python -m benchmarks hostile``
    wrote to docs/hostile.json (rebuilt from the file), every other figure of the section is the code's or the
    file's, and the targets it says are met are."""
    import json

    import test_formats_hostile as fuzz
    import test_rest_hostile as rest_fuzz
    from benchmarks import hostile_table
    from space.hosting.access import SUGGESTIONS_MAX_MB
    from space.hosting.limits import Limits
    from space.rest.libre import MAX_SUGGESTION_BYTES
    from transformer_hub.formats.budget import MAX_DEPTH, MAX_ELEMENTS, MAX_TEXT_UNITS

    report = json.loads((ROOT / "docs" / "hostile.json").read_text(encoding="utf-8"))
    text = page("hosting.md")
    section = text[text.index("## Hostile documents"):]
    assert hostile_table.markdown(report) in section and f"{hostile_table.flood_markdown(report)}." in section
    assert f"`{report['command']}`" in section and report["scale"] == 1.0
    assert f"load average of about {report['load_average_1min']:.0f}" in section and report["cores"] == 2
    size = {row["case"]: row["upload_bytes"] for row in report["uploads"]}
    for case, kb in (("odt-empty-paragraphs", 71), ("epub-empty-paragraphs", 48), ("docx-empty-paragraphs", 80)):
        assert round(size[case] / 1000) == kb and f"{kb} kB .{case[:case.index('-')]}" in section
    limits = Limits()
    stated = [f"{MAX_ELEMENTS:,} elements", f"{MAX_DEPTH} levels", f"{MAX_TEXT_UNITS:,} pieces of text",
              f"{fuzz.FUZZ_PER_FORMAT * 8} of them against the library",
              f"{rest_fuzz.FUZZ_PER_FORMAT * 8} over HTTP", f"{MAX_SUGGESTION_BYTES:,} bytes",
              f"`SPACE_DOCUMENT_SECONDS` ({limits.document_seconds})",
              f"`SPACE_DOCUMENT_MEMORY_MB` ({limits.document_memory_mb})",
              f"`SPACE_SUGGESTIONS_MAX_MB` ({SUGGESTIONS_MAX_MB})", f"reach its {SUGGESTIONS_MAX_MB} MB cap"]
    assert all(s in section for s in stated), [s for s in stated if s not in section]
    flood = report["suggest_flood"]
    rate = (flood["db_after_mb"] - flood["db_before_mb"]) / flood["seconds"]
    assert "in under two minutes" in section and (SUGGESTIONS_MAX_MB - flood["db_after_mb"]) / rate < 120
    assert flood["statuses"] and set(flood["statuses"]) <= {"200", "507"} and flood["cap_mb"] == SUGGESTIONS_MAX_MB
    # "all met": the targets, over every upload
    uploads = report["uploads"]
    assert "all met" in section and all(row["status"] < 500 for row in uploads)
    for key, target in hostile_table.TARGETS.items():
        assert max(row[key] for row in uploads) <= target, key
    assert sum(row["languages_failed"] for row in uploads) == 0
