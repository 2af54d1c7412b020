"""``python -m benchmarks l10n`` (localization files measured on the catalogs corpus): the command on a tiny built
corpus with translation functions in place of the model, and the docs' figures against its results file."""
import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from benchmarks import l10n, l10n_xliff
from benchmarks.benchmark import main
from helpers.corpus import cache_folder
from helpers.docs import page
from transformer_hub.formats.layout import CallbackModels

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "l10n_results.json"
ROWS = [  # (catalog, English, German/French/Czech stand-ins)
    ("gedit", "Could not open file %s: %s", "Datei %s: %s"),
    ("gedit", "_Open Recent", "_Zuletzt geöffnet"),
    ("gedit", "Hello {name}, you have <b>%d</b> new messages.", "Hallo {name}, <b>%d</b> neue Nachrichten."),
    ("gedit", "_Save As", "Speichern _unter"),
    ("gedit", "The window", "Das Fenster"),
    ("gedit", "A green tree", "Ein grüner Baum"),
    ("kmix", "&Configure Channels", "&Kanäle einrichten"),
    ("kmix", "Volume of %(channel)s", "Lautstärke von %(channel)s"),
    ("kmix", "Mute the sound", "Ton aus"),
    ("kmix", "See https://example.org/help for more", "Siehe https://example.org/help"),
]


def tiny_corpus(folder: Path) -> Path:
    lines = [json.dumps({"catalog": c, "context": None, "form": "singular",
                         "raw": {"en": en, "de": t, "fr": t, "cs": t}}) for c, en, t in ROWS]
    with gzip.open(folder / "test.raw.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return folder


def keeping(sentences):
    """Every piece and mark kept, behind a word of the target."""
    return [f"Übersetzt {s}" for s in sentences]


def breaking(sentences):
    """A printf directive the source does not have added where placeholders were: those entries must stay
    untranslated (with a warning), the others are translated."""
    return [f"{s} %d" if re.search(r"#\d", s) else f"Übersetzt {s}" for s in sentences]


class SoftwareFunction(CallbackModels):
    """A translation function standing for a model trained with the "software" domain."""

    def domains(self, name=None):
        return ("software",)


needs_tools = pytest.mark.skipif(shutil.which("msgfmt") is None or l10n.POFILTER is None,
                                 reason="needs msgfmt (gettext) and pofilter (translate-toolkit)")


@pytest.fixture(scope="module")
def schemas(request) -> Path:
    """The OASIS XLIFF schemas (Debian's php-symfony-translation, in pytest's cache)."""
    folder = cache_folder(request, "xliff-schemas") or Path(request.config.rootpath) / ".pytest_cache"
    try:
        return l10n_xliff.fetch_schemas(folder)
    except SystemExit as exc:
        pytest.skip(str(exc))


@needs_tools
@pytest.mark.parametrize("translate, untranslated", [(keeping, False), (breaking, True)])
def test_the_command_on_a_tiny_corpus_keeps_every_piece_and_writes_valid_catalogs(tmp_path, monkeypatch, translate,
                                                                                   untranslated, schemas):
    monkeypatch.setattr(l10n, "load_models", lambda path: SoftwareFunction(translate))
    assert main(["l10n", "--data-dir", str(tiny_corpus(tmp_path)), "--out", str(tmp_path), "--limit", "5",
                 "--speed-entries", "6", "--rounds", "3", "--schemas", str(schemas)]) == 0
    saved = json.loads((tmp_path / "l10n_results.json").read_text())
    assert saved["command"].startswith("python -m benchmarks l10n")
    for direction in ("en-de", "en-fr", "en-cs"):
        row = saved["directions"][direction]
        # 5 of the 7 protected rows: --limit
        assert row["entries"] == 5 and row["same_pieces_pct"] == 100.0
        with_placeholders = sum(bool(l10n.find_pieces(en)) for en in chosen(tmp_path))
        assert row["untranslated_with_warning"] == (with_placeholders if untranslated else 0)
        catalogs = row["catalogs"]
        assert catalogs["msgfmt_passed"] == catalogs["pofilter_passed"] == catalogs["same_entries_passed"] == 2
        assert catalogs["msgfmt_pass_pct"] == catalogs["pofilter_pass_pct"] == 100.0
        assert catalogs["entries"] == 5
        assert catalogs["translated"] == 5 - (with_placeholders if untranslated else 0)
        for version in ("1.2", "2.0"):  # the same 5 entries, one file per package, each valid
            xliff = catalogs["xliff"][version]
            assert (xliff["files"], xliff["valid"], xliff["units"], xliff["invalid"]) == (2, 2, 5, {})
            assert xliff["targets"] == xliff["targets_same_pieces"] == catalogs["translated"]
        assert row["bleu_with_pieces"] >= 0 and row["bleu_without"] >= 0 and row["entries_without"] == 3
        assert row["bleu_gap"] == pytest.approx(row["bleu_without"] - row["bleu_with_pieces"], abs=0.011)
        assert row["bleu_gap_95"][0] <= row["bleu_gap_95"][1]
    speed = saved["speed"]
    assert speed["entries"] == 6 and [len(speed["seconds"][side]) for side in ("document", "text")] == [3, 3]
    assert speed["ratio"] == pytest.approx(sum(speed["seconds"]["document"]) / sum(speed["seconds"]["text"]),
                                           abs=0.001)  # rounded to 3 places
    assert speed["cpu_ratio"] > 0 and len(speed["load_average"]) == 4  # before the rounds, after each


def chosen(folder: Path):
    rows = l10n.read_rows(folder)
    return [r["raw"]["en"] for r in l10n.samples(rows, 5)["pieces"]]


def test_the_sample_takes_rows_with_pieces_or_accelerators_and_as_many_without(tmp_path):
    sample = l10n.samples(l10n.read_rows(tiny_corpus(tmp_path)), 10)
    assert sorted(r["raw"]["en"] for r in sample["pieces"]) == sorted(
        en for _, en, _ in ROWS if en not in ("The window", "A green tree", "Mute the sound"))
    assert len(sample["plain"]) == 3  # all there are: fewer than the 7 with pieces
    assert {r["marker"] for r in sample["pieces"]} == {"_", "&"}


def test_each_entry_without_pieces_is_drawn_for_the_words_of_one_with_them():
    rows = [{"catalog": c, "raw": {"en": en}, "marker": None} for c, en in [
        ("a", "Open <b>%s</b> now"), ("b", "%d files in the folder of %s")]]
    plain = [{"catalog": c, "raw": {"en": en}} for c, en in [
        ("b", "Save"), ("a", "Open it"), ("b", "Open all the files"), ("a", "Open it now"), ("a", "Files in the bin")]]
    chosen = l10n.matched(rows, plain, l10n.random.Random(0))
    # "Open now": two words, package a's; "files in the folder of": five, none has five: four, package b's
    assert [r["raw"]["en"] for r in chosen] == ["Open it", "Open all the files"]
    assert l10n.words("See <a href='x'>the https://example.org page</a>, %1.") == "See the page , ."


def test_bleu_is_counted_on_the_words_the_pieces_taken_out():
    with_pieces = {"outputs": ["Öffnen <b>%s</b> jetzt"], "references": ["<b>%s</b> jetzt öffnen"],
                   "words_per_entry": 2.0}
    without = {"outputs": ["Speichern"], "references": ["Speichern"], "entries": 1, "words_per_entry": 1.0}
    row = l10n.bleu_row(with_pieces, without)
    # the copied tags would make "<b>%s</b> jetzt" a matching 6-gram: with them in, the score is far higher
    assert row["bleu_with_pieces"] < row["bleu_with_pieces_kept_in"]
    assert row["bleu_with_pieces"] == l10n.bleu(["Öffnen jetzt"], ["jetzt öffnen"])


@pytest.fixture(scope="module")
def saved() -> dict:
    return json.loads(RESULTS.read_text())


def test_the_results_file_meets_the_targets_that_hold_by_construction(saved):
    for row in saved["directions"].values():
        assert row["catalogs"]["msgfmt_pass_pct"] == row["catalogs"]["same_entries_pass_pct"] == 100.0


@pytest.mark.parametrize("name", ["rest-api.md", "cli.md"])
def test_the_rest_and_cli_pages_point_to_the_results(name):
    assert "benchmarks.md#localization-files-catalogs-with-placeholders" in page(name)
    assert "l10n_results.json" in page(name)


def test_the_benchmarks_page_quotes_the_results_file(saved):
    text = page("benchmarks.md")
    flat = " ".join(text.split())
    for direction, row in saved["directions"].items():
        catalogs, xliff = row["catalogs"], row["catalogs"]["xliff"]
        files = catalogs["files"]
        assert f"| {direction} | {row['entries']} | {row['same_pieces_pct']:g}% | " \
               f"{row['untranslated_with_warning']} | {catalogs['msgfmt_passed']}/{files} | " \
               f"{catalogs['pofilter_passed']}/{files} | {catalogs['same_entries_passed']}/{files} | " \
               f"{xliff['1.2']['valid']}/{xliff['1.2']['files']} | {xliff['2.0']['valid']}/{xliff['2.0']['files']} |" \
               in text, direction
        low, high = row["bleu_gap_95"]
        assert f"| {direction} | {row['bleu_with_pieces']:.1f} | {row['bleu_without']:.1f} | {row['bleu_gap']:.1f} " \
               f"({low:.1f} to {high:.1f}) | {row['bleu_with_pieces_kept_in']:.1f} |" in text, direction
        assert f"{catalogs['translated']} of {catalogs['entries']} ({direction})" in flat
        assert f"{xliff['1.2']['targets']} of {xliff['1.2']['units']} ({direction})" in flat
        assert xliff["1.2"]["targets"] == xliff["2.0"]["targets"]  # the page quotes one count for both versions
    speed = saved["speed"]
    assert f"{speed['entries']:,} test entries" in flat and f"{speed['ratio']:.2f}x the text path's time" in flat
    assert f"CPU seconds {speed['cpu_ratio']:.2f}x" in flat
    rounds = ", ".join(f"{d} s against {t} s" for d, t in zip(speed["seconds"]["document"], speed["seconds"]["text"]))
    assert rounds in flat and f"load average {speed['load_average'][0]}" in flat
    assert f"a seeded sample of {saved['directions']['en-de']['entries']} distinct test entries" in flat
