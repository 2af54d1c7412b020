"""``python -m benchmarks l10n`` (localization files measured on the catalogs corpus): the command on a tiny built
corpus with translation functions in place of the model, and the docs' figures against its results file."""
import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from benchmarks import l10n
from benchmarks.benchmark import main
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


@needs_tools
@pytest.mark.parametrize("translate, untranslated", [(keeping, False), (breaking, True)])
def test_the_command_on_a_tiny_corpus_keeps_every_piece_and_writes_valid_catalogs(tmp_path, monkeypatch, translate,
                                                                                   untranslated):
    monkeypatch.setattr(l10n, "load_models", lambda path: SoftwareFunction(translate))
    assert main(["l10n", "--data-dir", str(tiny_corpus(tmp_path)), "--out", str(tmp_path), "--limit", "5",
                 "--speed-entries", "6", "--rounds", "2"]) == 0
    saved = json.loads((tmp_path / "l10n_results.json").read_text())
    assert saved["command"].startswith("python -m benchmarks l10n")
    for direction in ("en-de", "en-fr", "en-cs"):
        row = saved["directions"][direction]
        # 5 of the 7 protected rows: --limit
        assert row["entries"] == 5 and row["same_pieces_pct"] == 100.0
        with_placeholders = sum(bool(l10n.find_pieces(en)) for en in chosen(tmp_path))
        assert row["untranslated_with_warning"] == (with_placeholders if untranslated else 0)
        catalogs = row["catalogs"]
        assert catalogs["msgfmt_pass_pct"] == catalogs["pofilter_pass_pct"] == catalogs["same_entries_pct"] == 100.0
        assert catalogs["entries"] == 5
        assert catalogs["translated"] == 5 - (with_placeholders if untranslated else 0)
        assert row["bleu_with_pieces"] >= 0 and row["bleu_without"] >= 0
    assert saved["speed"]["entries"] == 6 and len(saved["speed"]["seconds"]["document"]) == 2


def chosen(folder: Path):
    rows = l10n.read_rows(folder)
    return [r["raw"]["en"] for r in l10n.samples(rows, 5)["pieces"]]


def test_the_sample_takes_rows_with_pieces_or_accelerators_and_as_many_without(tmp_path):
    sample = l10n.samples(l10n.read_rows(tiny_corpus(tmp_path)), 10)
    assert sorted(r["raw"]["en"] for r in sample["pieces"]) == sorted(
        en for _, en, _ in ROWS if en not in ("The window", "A green tree", "Mute the sound"))
    assert len(sample["plain"]) == 3  # all there are: fewer than the 7 with pieces
    assert {r["marker"] for r in sample["pieces"]} == {"_", "&"}


@pytest.fixture(scope="module")
def saved() -> dict:
    return json.loads(RESULTS.read_text())


def test_the_results_file_meets_the_targets_that_hold_by_construction(saved):
    for row in saved["directions"].values():
        assert row["catalogs"]["msgfmt_pass_pct"] == row["catalogs"]["same_entries_pct"] == 100.0


@pytest.mark.parametrize("name", ["rest-api.md", "cli.md"])
def test_the_rest_and_cli_pages_point_to_the_results(name):
    assert "benchmarks.md#localization-files-catalogs-with-placeholders" in page(name)
    assert "l10n_results.json" in page(name)


def test_the_benchmarks_page_quotes_the_results_file(saved):
    text = page("benchmarks.md")
    for direction, row in saved["directions"].items():
        catalogs = row["catalogs"]
        assert f"| {direction} | {row['entries']} | {row['same_pieces_pct']:g}% | " \
               f"{row['untranslated_with_warning']} | {catalogs['files']} | {catalogs['msgfmt_pass_pct']:g}% | " \
               f"{catalogs['pofilter_pass_pct']:g}% | {catalogs['same_entries_pct']:g}% | " \
               f"{row['bleu_with_pieces']:.1f} | {row['bleu_without']:.1f} |" in text, direction
        assert f"{catalogs['translated']} of {catalogs['entries']} ({direction})" in text
    speed = saved["speed"]
    flat = " ".join(text.split())
    assert f"{speed['entries']} test entries" in flat and f"{speed['ratio']:.2f}x the text path's time" in flat
    document, texts = speed["seconds"]["document"], speed["seconds"]["text"]
    assert f"{document[0]} s against {texts[0]} s, then {texts[1]} s against {document[1]} s" in flat
    assert f"a seeded sample of {saved['directions']['en-de']['entries']} distinct test entries" in flat
