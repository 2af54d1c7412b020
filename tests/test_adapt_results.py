"""``python -m benchmarks adapt`` (the adaptation measured on unseen packages): a projects split written as real
catalogs, the command end to end on a tiny model, and docs/adapt.md's table against docs/adapt_results.json."""
import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks import adapt as bench
from benchmarks.benchmark import main
from helpers.adapt_fixtures import entries, train_tagged
from helpers.docs import page
from transformer_hub.training.user_data import read_directions

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "adapt_results.json"
SPECIAL = [  # (msgctxt, raw English, raw German, raw French, German kept by the corpus)
    ("menu", "_Open the branch", "Zweig ö_ffnen", "_Ouvrir la branche", True),
    ("button", "_Open the branch", "Zweig jetzt ö_ffnen", "_Ouvrir maintenant", True),
    (None, "Commit %s now", "%s jetzt einspielen", "Valider %s maintenant", False),  # German dropped by a filter
]


def tiny_projects(folder: Path, n: int = 60) -> Path:
    """A projects split of one package, ``tinyapp``: the fixture's entries and ``SPECIAL``; no Czech."""
    rows = [(None, e["en"], e["de"], e["fr"], True) for e in entries(n)] + SPECIAL
    raw = [json.dumps({"catalog": "tinyapp", "context": c, "form": "singular", "rows_merged": 1,
                       "raw": {"en": en, "de": de, "fr": fr, "cs": None}}) for c, en, de, fr, _ in rows]
    clean = {"en": [en.replace("_", "") for _, en, *_ in rows], "cs": [""] * len(rows),
             "de": [de.replace("_", "") if kept else "" for _, _, de, _, kept in rows],
             "fr": [fr.replace("_", "") for *_, fr, _ in rows]}
    files = {"ids": [f"tinyapp#{k}" for k in range(len(rows))], "raw": raw, **clean}
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in files.items():
        (folder / f"projects.{name}.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return folder


def test_a_package_becomes_one_catalog_per_language_as_a_localizer_has_them(tmp_path):
    rows = bench.read_projects(tiny_projects(tmp_path / "corpus"))["tinyapp"]
    files = bench.write_catalogs(rows, tmp_path / "po")
    assert [f.relative_to(tmp_path / "po").as_posix() for f in files] == ["de/tinyapp.po", "fr/tinyapp.po"]
    if shutil.which("msgfmt"):
        for path in files:
            subprocess.run(["msgfmt", "--check", "-o", "/dev/null", str(path)], check=True)
    de, fr = read_directions([str(f) for f in files])
    assert (de.name, fr.name) == ("en-de", "en-fr")
    assert len(fr.pairs) == len(rows) and len(de.pairs) == len(rows) - 1  # the row whose German the corpus dropped
    # both msgctxts of one msgid kept, their accelerators taken off as adapt takes them off a catalog
    assert ("Open the branch", "Zweig jetzt öffnen") in de.pairs and ("Open the branch", "Zweig öffnen") in de.pairs
    assert not any(s.startswith("Commit %s") for s, _ in de.pairs)


def test_the_doc_table_goes_between_its_markers_and_nowhere_else(tmp_path):
    doc = tmp_path / "adapt.md"
    doc.write_text(f"# Page\n\nbefore\n{bench.START}\nold\n{bench.END}\nafter\n", encoding="utf-8")
    bench.write_doc(doc, "| new |")
    assert doc.read_text() == f"# Page\n\nbefore\n{bench.START}\n| new |\n{bench.END}\nafter\n"
    doc.write_text("# no markers\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="has no <!-- adapt-results --> ... <!-- /adapt-results --> markers"):
        bench.write_doc(doc, "| new |")


@pytest.mark.slow  # trains a tiny model and adapts it
def test_the_command_adapts_each_package_in_every_direction_and_writes_its_figures(tmp_path):
    base, captions, software = train_tagged(tmp_path)
    doc = tmp_path / "adapt.md"
    doc.write_text(f"intro\n{bench.START}\n{bench.END}\n", encoding="utf-8")
    assert main(["adapt", "--data-dir", str(tiny_projects(tmp_path / "corpus")), "--model", str(base),
                 "--replay-data", f"captions={captions}", "--replay-data", f"software={software}", "--threads", "1",
                 "--max-updates", "4", "--max-tokens", "300", "--warmup", "4", "--peak-lr", "0.003",
                 "--eval-every", "2", "--val-limit", "8", "--work", str(tmp_path / "work"), "--out", str(tmp_path),
                 "--doc", str(doc)]) == 0
    results = json.loads((tmp_path / "adapt_results.json").read_text())
    found = results["packages"]["tinyapp"]
    record = json.loads((tmp_path / "work" / "tinyapp" / "model" / "adapt.json").read_text())
    assert record["directions"] == list(found["directions"]) == ["en-de", "en-fr"]
    rows = len(entries(60)) + len(SPECIAL)
    assert found["updates"] == record["training"]["updates"] == 4
    assert found["entries"] == {"de": rows - 1, "fr": rows, "cs": 0}
    for name, row in found["directions"].items():
        held = record["after"][name]["held_out"]["bleu"] - record["before"][name]["held_out"]["bleu"]
        assert row["gain"] == pytest.approx(held, abs=0.011)
        assert set(row["val"]) == {"captions", "software"}
        assert row["met"] == (row["gain"] >= 8 and all(v["change"] >= -0.5 for v in row["val"].values()))
    assert record["command"].startswith("python -m transformer_hub adapt --from ") and "--max-updates 4" in \
        record["command"]
    for command in (record["command"], results["command"]):  # no machine's folders recorded
        assert str(tmp_path) not in command and "captions=captions" in command
    assert doc.read_text() == f"intro\n{bench.START}\n{bench.table(results)}\n{bench.END}\n"


def test_the_page_quotes_the_results_file_or_says_it_is_not_measured():
    text = page("adapt.md")
    section = text.split(bench.START, 1)[1].split(bench.END, 1)[0].strip()
    if not RESULTS.is_file():
        assert section == "Not measured yet." and "|" not in section
        pytest.skip("docs/adapt_results.json is not there yet: run the measurement docs/adapt.md names")
    results = json.loads(RESULTS.read_text())
    assert section == bench.table(results)
    assert results["command"].startswith("python -m benchmarks adapt")
    assert "python -m benchmarks adapt" in text


def _spans(results: dict) -> dict:
    """The lowest and highest held-out gain and val change over every package and direction of a results file."""
    rows = [row for p in results["packages"].values() for row in p["directions"].values()]
    found = {"gain": [row["gain"] for row in rows]}
    for name in rows[0]["val"]:
        found[name] = [row["val"][name]["change"] for row in rows]
    return {name: (min(values), max(values)) for name, values in found.items()}


def test_the_pages_prose_is_the_results_files_v4_and_v3():
    """The figures the page's prose gives: v4's gains and val changes (docs/adapt_results.json), v3's gains
    (docs/adapt_results_v3.json, the measurement before v4 existed)."""
    if not RESULTS.is_file():
        pytest.skip("docs/adapt_results.json is not there yet")
    text = " ".join(page("adapt.md").split())
    v4, v3 = json.loads(RESULTS.read_text()), json.loads((ROOT / "docs" / "adapt_results_v3.json").read_text())
    assert v4["model"] == "space/models/multilingual-v4" and v3["model"] == "space/retired/multilingual-v3"
    spans, old = _spans(v4), _spans(v3)
    met = sum(row["gain"] >= 8 for p in v4["packages"].values() for row in p["directions"].values())
    assert f"gained {spans['gain'][0]:.2f} to {spans['gain'][1]:.2f} BLEU ({met} of 9 directions by 8 or more)" in text
    assert f"captions val changed by {spans['captions'][0]:+.2f} to {spans['captions'][1]:+.2f}" in text
    assert f"software val by {spans['software'][0]:+.2f} to {spans['software'][1]:+.2f}" in text
    assert f"With v3 as the base it gained {old['gain'][0]:.2f} to {old['gain'][1]:.2f}" in text
    assert f"its captions val fell by up to {-old['captions'][0]:.2f}" in text
