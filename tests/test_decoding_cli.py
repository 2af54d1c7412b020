"""``translate --prefix-file`` and ``--alternatives K`` (JSON lines)."""
import json

import pytest

from helpers.cli import run
from helpers.decoding_fixtures import one_thread, random_model
from transformer_hub.cli.options import one_line
from transformer_hub.text import translate_texts

@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield

def test_prefix_file_forces_each_lines_prefix(model_dir, tmp_path, monkeypatch, capsys):
    prefixes = tmp_path / "prefixes.txt"
    prefixes.write_text("ein hund \n\nder k\n", encoding="utf-8")
    lines = ["a dog runs .", "the man sits .", "the child plays ."]
    status, out, err = run(["translate", "--model", str(model_dir), "--prefix-file", str(prefixes),
                            "--strategy", "beam", "--max-len-offset", "5"], "\n".join(lines).encode(),
                           monkeypatch, capsys)
    assert status == 0, err
    got = out.rstrip("\n").split("\n")
    expected = random_model().translate(lines, strategy="beam", max_len_offset=5,
                                        prefix=["ein hund ", "", "der k"])
    assert got == [one_line(t) for t in expected]
    assert got[0].startswith("ein hund") and got[2].startswith("der k")

def test_prefix_file_errors_are_one_line(model_dir, tmp_path, monkeypatch, capsys):
    prefixes = tmp_path / "two.txt"
    prefixes.write_text("ein\nzwei leute sitzen auf der bank mit einem ball\n", encoding="utf-8")
    status, _, err = run(["translate", "--model", str(model_dir), "--prefix-file", str(prefixes)], b"a dog .\n",
                         monkeypatch, capsys)
    assert status == 2 and "has 2 lines for 1 input lines" in err and "Traceback" not in err
    status, _, err = run(["translate", "--model", str(model_dir), "--prefix-file", str(prefixes), "--max-length",
                          "3"], b"a dog .\nthe man .\n", monkeypatch, capsys)
    assert status == 2 and "more than the 3 output tokens" in err and "Traceback" not in err

def test_alternatives_write_json_lines(model_dir, monkeypatch, capsys):
    status, out, err = run(["translate", "--model", str(model_dir), "--alternatives", "3", "--max-length", "4"],
                           b"a dog runs .\n\nthe man .\n", monkeypatch, capsys)
    assert status == 0, err
    records = [json.loads(line) for line in out.rstrip("\n").split("\n")]
    assert [r["line"] for r in records] == [0, 1, 2] and records[1]["hypotheses"][0]["text"] == ""
    for record in (records[0], records[2]):
        (hyp,) = record["hypotheses"]
        assert len(hyp["alternatives"]) in (len(hyp["tokens"]), len(hyp["tokens"]) + 1)  # + eos's step
        for step, piece in zip(hyp["alternatives"], hyp["tokens"]):
            probs = [p for _, p in step]
            assert 3 <= len(step) <= 4 and probs == sorted(probs, reverse=True)
            assert piece in [p for p, _ in step]
    status, _, err = run(["translate", "--model", str(model_dir), "--alternatives", "-2"], b"a\n", monkeypatch, capsys)
    assert status == 2 and "return_alternatives" in err

def test_split_sentences_json_lines_keep_each_line(model_dir, monkeypatch, capsys):
    lines = ["A dog runs. The man sits.", "", "The child plays."]
    status, out, err = run(["translate", "--model", str(model_dir), "--split-sentences", "--json", "--max-length",
                            "4"], "\n".join(lines).encode(), monkeypatch, capsys)
    assert status == 0, err
    records = [json.loads(line) for line in out.rstrip("\n").split("\n")]
    expected = translate_texts(random_model(), lines, max_length=4)
    assert [r["text"] for r in records] == [e.text for e in expected]
    assert [len(r["sentences"]) for r in records] == [2, 0, 1]
    assert records[0]["sentences"][1]["source"] == "The man sits."
    assert records[0]["confidence"] == expected[0].best.confidence
    assert records[0]["sentences"][0]["confidence"] == expected[0].sentences[0].best.confidence
    assert all(r["src_lang"] is None and r["src_lang_confidence"] is None for r in records)  # names no languages
    status, out, err = run(["translate", "--model", str(model_dir), "--split-sentences", "--max-length", "4"],
                           "\n".join(lines).encode(), monkeypatch, capsys)
    assert status == 0 and out.split("\n")[:3] == [one_line(e.text) for e in expected]

def test_src_lang_auto_reports_the_detected_language(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "en-de"
    random_model(src_lang="en", tgt_lang="de").save_pretrained(folder)
    status, out, err = run(["translate", "--model", str(folder), "--src-lang", "auto", "--json", "--max-length", "3"],
                           "A man rides a bike down the street.\n".encode(), monkeypatch, capsys)
    assert status == 0, err
    record = json.loads(out)
    assert record["src_lang"] == "en" and 0.5 < record["src_lang_confidence"] <= 1.0
    status, _, err = run(["translate", "--model", str(folder), "--src-lang", "auto"],
                         "A dog.\nUn homme descend la rue à vélo et un chien court derrière lui.\n".encode(),
                         monkeypatch, capsys)
    assert status == 2 and "Traceback" not in err
    assert "text 2 looks like French (fr), which this model does not read; it serves en, de" in err

def test_src_lang_auto_needs_named_languages(model_dir, monkeypatch, capsys):
    status, _, err = run(["translate", "--model", str(model_dir), "--src-lang", "auto"], b"A dog.\n",
                         monkeypatch, capsys)
    assert status == 2 and "src_lang='auto' needs a model that names its languages" in err
