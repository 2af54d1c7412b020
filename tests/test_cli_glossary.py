"""``translate --glossary FILE``: terms applied end to end; a bad file is one line on stderr and exit status 2."""
import json

import pytest

from helpers.cli import run
from helpers.decoding_fixtures import one_thread, random_model
from transformer_hub.cli.options import one_line
from transformer_hub.text import translate_texts

LINES = ["a dog runs .", "the man sits .", "two people sit on a bench ."]


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


def test_glossary_terms_appear_in_the_translations(model_dir, tmp_path, monkeypatch, capsys):
    glossary = tmp_path / "terms.tsv"
    glossary.write_text("dog\twasser\nBench\tgruen\n", encoding="utf-8")
    status, out, err = run(["translate", "--model", str(model_dir), "--glossary", str(glossary)],
                           "\n".join(LINES).encode(), monkeypatch, capsys)
    assert status == 0, err
    got = out.rstrip("\n").split("\n")
    expected = translate_texts(random_model(), LINES, strategy="beam", glossary={"dog": "wasser", "Bench": "gruen"},
                               split_sentences=False)
    assert got == [one_line(r.text) for r in expected]
    assert "wasser" in got[0] and "gruen" in got[2]
    assert got[1] == one_line(random_model().translate([LINES[1]], strategy="beam")[0])


def test_glossary_json_lists_the_entries_applied(model_dir, tmp_path, monkeypatch, capsys):
    glossary = tmp_path / "terms.csv"
    glossary.write_text('dog,wasser\n"sit on",gruen\n', encoding="utf-8")
    status, out, err = run(["translate", "--model", str(model_dir), "--glossary", str(glossary), "--json"],
                           "\n".join(LINES).encode(), monkeypatch, capsys)
    assert status == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0]["glossary"] == [{"source": "dog", "target": "wasser"}] and "wasser" in lines[0]["text"]
    assert "glossary" not in lines[1]
    assert lines[2]["glossary"] == [{"source": "sit on", "target": "gruen"}]


@pytest.mark.parametrize("content, extra, message", [
    ("dog wasser\n", [], "line 1: expected source<TAB>target, got 1 field"),
    ("dog\t\n", [], "line 1: the target term is empty"),
    ("".join(f"t{i}\tz{i}\n" for i in range(10_000)), [], "more than the 5000 entries allowed"),
    ("x" * 300 + "\tz\n", [], "the source term is 300 characters, more than the 200"),
    ("dog\twasser\n", ["--strategy", "greedy"], "--glossary needs beam search"),
    ("dog\twasser\n", ["--engine", "ctranslate2"], "--glossary needs --engine pytorch"),
])
def test_a_bad_glossary_is_one_line_and_exit_2(model_dir, tmp_path, monkeypatch, capsys, content, extra, message):
    glossary = tmp_path / "terms.tsv"
    glossary.write_text(content, encoding="utf-8")
    status, out, err = run(["translate", "--model", str(model_dir), "--glossary", str(glossary), *extra],
                           b"a dog .\n", monkeypatch, capsys)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err


def test_a_missing_glossary_file_is_one_line(model_dir, tmp_path, monkeypatch, capsys):
    status, _, err = run(["translate", "--model", str(model_dir), "--glossary", str(tmp_path / "none.tsv")],
                         b"a dog .\n", monkeypatch, capsys)
    assert status == 2 and len(err.strip().splitlines()) == 1 and "cannot read the glossary" in err
