"""The command line: translate (plain and n-best TSV), evaluate (sacreBLEU, chrF), train forwarding, errors."""
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu

from helpers.cli import run
from helpers.corpus import MULTI30K, MULTI30K_MISSING
from helpers.decoding_fixtures import one_thread, random_model
from helpers.tolerances import exactly, f64
from transformer_hub import Registry, cli
from transformer_hub.cli.options import one_line, read_input
from transformer_hub.training import data as data_module
from transformer_hub.training import trainer as train_module
from transformer_hub.training.metrics import score, score_with_signatures

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


def test_translate_one_line_in_one_line_out(model_dir, monkeypatch, capsys):
    lines = ["a dog runs .", "", "   ", "the man 🙂 مرحبا 你好", "two people\r", "\x00\x07 ctrl"]
    data = ("\n".join(lines) + "\n").encode()
    status, out, err = run(["translate", "--model", str(model_dir), "--max-length", "5"], data, monkeypatch, capsys)
    assert status == 0, err
    assert out.endswith("\n")
    got = out[:-1].split("\n")
    assert len(got) == len(lines)
    assert got[1] == "" and got[2] == ""
    model = random_model()
    expected = model.translate([line.rstrip("\r") for line in lines], max_length=5)
    assert got == [one_line(t) for t in expected]


def test_translate_without_final_newline_and_empty_input(model_dir, monkeypatch, capsys):
    status, out, _ = run(["translate", "--model", str(model_dir), "--max-length", "3"], b"a dog\nthe man",
                         monkeypatch, capsys)
    assert status == 0 and out.count("\n") == 2
    status, out, _ = run(["translate", "--model", str(model_dir)], b"", monkeypatch, capsys)
    assert status == 0 and out == ""


@pytest.mark.slow
def test_translate_n_best_tsv(model_dir, monkeypatch, capsys):
    data = "a dog runs .\n\nthe man sits .\n".encode()
    status, out, err = run(["translate", "--model", str(model_dir), "--strategy", "beam", "--beam-size", "4",
                            "--n-best", "3", "--length-penalty", "0.6", "--max-length", "6", "--batch-size", "1",
                            "--workers", "2"],
                           data, monkeypatch, capsys)
    assert status == 0, err
    rows = [line.split("\t") for line in out.rstrip("\n").split("\n")]
    assert all(len(r) == 5 for r in rows)
    assert [(int(r[0]), int(r[1])) for r in rows] == [(0, 0), (0, 1), (0, 2), (1, 0), (2, 0), (2, 1), (2, 2)]
    for line in (0, 2):
        normalized = [float(r[3]) for r in rows if int(r[0]) == line]
        assert normalized == sorted(normalized, reverse=True)
    assert rows[3][4] == ""


def test_translate_input_output_files_and_sampling(model_dir, tmp_path, monkeypatch, capsys):
    src = tmp_path / "src.txt.gz"
    src.write_bytes(gzip.compress("a dog .\nthe child plays .\n".encode()))
    outs = []
    for i in range(2):
        hyp = tmp_path / f"hyp{i}.txt"
        status, _, err = run(["translate", "--model", str(model_dir), "--input", str(src), "--output", str(hyp),
                              "--strategy", "sample", "--seed", "3", "--top-k", "5", "--top-p", "0.9",
                              "--temperature", "0.7", "--max-len-offset", "4", "--batch-size", "1"]
                             + (["--workers", "2", "--parallel", "threads"] if i else []), b"", monkeypatch, capsys)
        assert status == 0, err
        outs.append(hyp.read_text(encoding="utf-8"))
    assert outs[0] == outs[1] and outs[0].count("\n") == 2  # the same samples from one worker or two


def test_evaluate_prints_bleu_and_chrf(model_dir, tmp_path, monkeypatch, capsys):
    src, ref = tmp_path / "src.en.gz", tmp_path / "ref.de"
    src.write_bytes(gzip.compress(b"a dog runs .\nthe man sits .\n"))
    ref.write_text("ein hund rennt .\nder mann sitzt .\n", encoding="utf-8")
    status, out, err = run(["evaluate", "--model", str(model_dir), "--src", str(src), "--ref", str(ref),
                            "--lowercase", "--max-length", "5"], b"", monkeypatch, capsys)
    assert status == 0, err
    assert "BLEU (cased) =" in out and "BLEU (lowercased) =" in out and "chrF =" in out
    assert "sentences/s" in out
    status, out, err = run(["evaluate", "--model", str(model_dir), "--src", str(src), "--ref", str(ref), "--json",
                            "--strategy", "beam", "--beam-size", "2", "--max-length", "5"], b"", monkeypatch, capsys)
    assert status == 0, err
    scores = json.loads(out)
    assert scores["sentences"] == 2 and scores["strategy"] == "beam" and 0 <= scores["bleu"] <= 100
    assert {"chrf", "bleu_signature", "sentences_per_second"} <= set(scores)


def test_score_is_sacrebleu_and_the_cli_uses_the_library_scorer():
    refs = ["Ein Hund rennt im Park .", "Zwei Leute sitzen auf einer Bank ."]
    perfect = score(refs, refs)
    assert perfect["bleu"] == f64(100.0, scale=100) and perfect["chrf"] == f64(100.0, scale=100)
    lowered, signatures = score_with_signatures([r.lower() for r in refs], refs)
    assert lowered["bleu_lowercase"] == f64(100.0, scale=100) and lowered["bleu"] < 100.0
    assert lowered["bleu"] == exactly(sacrebleu.corpus_bleu([r.lower() for r in refs], [refs]).score)  # the same call
    assert signatures.keys() == lowered.keys() and "case:lc" in signatures["bleu_lowercase"]
    assert set(score(refs, refs, lowercase=False)) == {"bleu", "chrf"}
    assert not hasattr(cli, "score")  # one scorer: transformer_hub.training.metrics


@pytest.mark.data
@pytest.mark.skipif(not (MULTI30K / "val.en.gz").is_file(), reason=MULTI30K_MISSING)
def test_evaluate_reads_multi30k_gz(model_dir, monkeypatch, capsys):
    status, out, err = run(["evaluate", "--model", str(model_dir), "--src", str(MULTI30K / "val.en.gz"),
                            "--ref", str(MULTI30K / "val.de.gz"), "--limit", "8", "--max-length", "4", "--json"],
                           b"", monkeypatch, capsys)
    assert status == 0, err
    assert json.loads(out)["sentences"] == 8


def test_train_is_forwarded(monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr(train_module, "main", lambda argv: seen.setdefault("argv", argv) and 0)
    status, _, _ = run(["train", "--preset", "tiny", "--max-updates", "3"], b"", monkeypatch, capsys)
    assert status == 0 and seen["argv"] == ["--preset", "tiny", "--max-updates", "3"]


@pytest.fixture
def hello_command():
    cli.command("hello", "say hi")(lambda argv: print("hi", *argv) or 0)
    yield
    cli.COMMANDS.unregister("hello")


def test_commands_are_a_registry(hello_command, monkeypatch, capsys):
    assert isinstance(cli.COMMANDS, Registry)
    assert {"download", "translate", "evaluate", "export", "train"} <= set(cli.COMMANDS.names())
    status, out, _ = run(["hello", "x"], b"", monkeypatch, capsys)
    assert status == 0 and out == "hi x\n"
    status, out, _ = run(["--help"], b"", monkeypatch, capsys)
    assert status == 0 and "  hello  " in out.replace("hello     ", "hello  ") and "say hi" in out
    with pytest.raises(ValueError, match="already registered"):
        cli.command("translate", "again")(lambda argv: 0)


@pytest.mark.parametrize("argv, message", [
    (["translate", "--model", "/no/such/model/dir"], "does not exist"),
    (["translate", "--model", "{model}", "--beam-size", "many"], "invalid int value"),
    (["translate", "--model", "{model}", "--strategy", "nope"], "unknown decoding strategy"),
    (["translate", "--model", "{model}", "--strategy", "beam", "--beam-size", "2", "--n-best", "5"], "n_best"),
    (["translate", "--model", "{model}", "--top-p", "0"], "top_p"),
    (["translate", "--model", "{model}", "--input", "/no/such/file.txt"], "cannot read"),
    (["translate", "--model", "{model}", "--threads", "0"], "--threads"),
    (["translate", "--model", "{model}", "--workers", "0"], "--workers must be between 1 and 64"),
    (["translate"], "--model"),
    (["translate", "--model", "{model}/config.json"], "is a file"),
    (["translate", "--model", "{notok}"], "no tokenizer"),
    (["translate", "--model", "{broken}"], "cannot load folder"),
    (["evaluate", "--model", "{model}", "--src", "{src}", "--ref", "{short}"], "lines"),
    (["evaluate", "--model", "{model}", "--src", "/no/such.gz", "--ref", "{src}"], "cannot read"),
    (["evaluate", "--model", "{model}", "--src", "{corrupt}", "--ref", "{src}"], "cannot read"),
    (["frobnicate"], "unknown command 'frobnicate': use one of adapt, corpus, download, evaluate, export"),
    (["train", "--out", "{tmp}/run", "--data-dir", "{tmp}/nothing"],
     "no Multi30k at {tmp}/nothing: run `python -m transformer_hub download`, or pass --data-dir / --train-src"),
    (["train", "--out", "{tmp}/run", "--data-dir", "{tmp}", "--langs", "en,fr"],
     "{tmp}: no train.en.gz or train.en: run `python -m transformer_hub download --langs en --dest {tmp}`"),
    (["train", "--out", "{tmp}/run", "--train-src", "{src}"], "need --valid-src/--valid-tgt too"),
    (["train", "--out", "{tmp}/run", "--max-updates", "x"], "invalid int value"),
    (["download", "--langs", "en,xx", "--dest", "{tmp}/m30k"], "--langs en,xx: Multi30k has en, de, fr, cs"),
    (["download", "--dest", "{src}"], "cannot write to"),
    (["translate", "--model", "{model}", "--input", "{tmp}"], "cannot read"),
    (["translate", "--model", "{model}", "--tgt-lang", "de"], "--src-lang/--tgt-lang: this model names no languages"),
])
def test_user_errors_exit_2_with_one_line(argv, message, model_dir, tmp_path, monkeypatch, capsys):
    notok = tmp_path / "notok"
    model = random_model()
    model.tokenizer = None
    model.save_pretrained(notok)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    src, short, corrupt = tmp_path / "src.txt", tmp_path / "short.txt", tmp_path / "corrupt.gz"
    src.write_text("a\nb\n")
    short.write_text("a\n")
    corrupt.write_bytes(b"\x1f\x8b\x08\x00garbage")
    fill = dict(model=model_dir, notok=notok, broken=broken, src=src, short=short, corrupt=corrupt, tmp=tmp_path)
    monkeypatch.setattr(data_module, "fetch_url", offline)
    status, out, err = run([a.format(**fill) for a in argv], b"a dog\n", monkeypatch, capsys)
    assert status == 2
    assert message.format(**fill) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert out == ""


@pytest.mark.slow
def test_module_entry_point_end_to_end(model_dir):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    ok = subprocess.run([sys.executable, "-m", "transformer_hub", "translate", "--model", str(model_dir),
                         "--max-length", "3", "--strategy", "beam", "--threads", "1"],
                        input="a dog .\n\nthe man .\n".encode(), capture_output=True, env=env, timeout=120)
    assert ok.returncode == 0, ok.stderr.decode()
    assert ok.stdout.decode("utf-8").count("\n") == 3
    bad = subprocess.run([sys.executable, "-m", "transformer_hub", "translate", "--model", "/no/such/dir"],
                         capture_output=True, env=env, timeout=120)
    assert bad.returncode == 2 and b"Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert b"does not exist: pass a save_pretrained folder" in bad.stderr
    for debug in (["--debug"], []):  # the flag, or the environment variable
        shown = subprocess.run([sys.executable, "-m", "transformer_hub", *debug, "translate", "--model", "/no/dir"],
                               capture_output=True, env={**env, "TRANSFORMER_HUB_DEBUG": "" if debug else "1"},
                               timeout=120)
        assert shown.returncode == 2 and b"Traceback" in shown.stderr and b"CLIError" in shown.stderr


def test_n_best_alone_means_beam_search(model_dir, monkeypatch, capsys):
    status, out, err = run(["translate", "--model", str(model_dir), "--n-best", "6", "--max-length", "4"],
                           b"a dog runs .\n", monkeypatch, capsys)
    assert status == 0, err
    rows = [line.split("\t") for line in out.rstrip("\n").split("\n")]
    assert [int(r[1]) for r in rows] == list(range(6))  # beam search with beam_size raised to 6
    expected = random_model().translate(["a dog runs ."], strategy="beam", beam_size=6, max_length=4)
    assert rows[0][4] == one_line(expected[0])


def offline(url: str) -> bytes:
    raise OSError(f"no network in tests ({url})")


def test_download_fetches_every_language_by_default(tmp_path, monkeypatch, capsys):
    fetched = []

    def fetch(url: str) -> bytes:
        fetched.append(url.rsplit("/", 1)[1])
        return gzip.compress(b"A line.\n")

    monkeypatch.setattr(data_module, "fetch_url", fetch)
    status, out, err = run(["download", "--dest", str(tmp_path / "m30k")], b"", monkeypatch, capsys)
    assert status == 0, err
    assert {name.split(".")[1] for name in fetched} == {"en", "de", "fr", "cs"}
    assert "train.cs.gz" in fetched and "test_2017_flickr.cs.gz" not in fetched  # not published for Czech
    assert sorted(p.name for p in (tmp_path / "m30k").iterdir()) == sorted(fetched)
    assert f"{len(fetched)} new file(s) in {tmp_path / 'm30k'}" in out
    fetched.clear()
    status, out, err = run(["download", "--langs", "en, fr", "--dest", str(tmp_path / "two")], b"", monkeypatch, capsys)
    assert status == 0, err
    assert {name.split(".")[1] for name in fetched} == {"en", "fr"} and len(fetched) == 10


def test_download_without_network_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(data_module, "fetch_url", offline)
    status, out, err = run(["download", "--langs", "de", "--dest", str(tmp_path)], b"", monkeypatch, capsys)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "cannot download https://raw.githubusercontent.com/multi30k/" in err and "check the connection" in err
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_unexpected_errors_are_one_line_and_debug_shows_the_traceback(monkeypatch, capsys):
    def broken(argv):
        raise RuntimeError("something inside broke\nsecond line")

    cli.command("broken", "raises")(broken)
    try:
        status, out, err = run(["broken"], b"", monkeypatch, capsys)
        assert status == 1 and err.strip() == ("transformer_hub broken: error: RuntimeError: something inside broke "
                                               "(unexpected; rerun with --debug for the traceback)")
        status, out, err = run(["--debug", "broken"], b"", monkeypatch, capsys)
        assert status == 1 and "Traceback (most recent call last)" in err and "second line" in err
        monkeypatch.setenv("TRANSFORMER_HUB_DEBUG", "1")
        status, out, err = run(["broken"], b"", monkeypatch, capsys)
        assert status == 1 and "Traceback" in err
    finally:
        cli.COMMANDS.unregister("broken")


def test_input_errors_replace_bad_bytes_and_allow_empty_input(model_dir, tmp_path, monkeypatch, capsys):
    src = tmp_path / "latin1.txt"
    src.write_bytes(b"caf\xe9 .\n")  # Latin-1, not UTF-8: translated with U+FFFD, not refused
    status, out, err = run(["translate", "--model", str(model_dir), "--input", str(src), "--max-length", "3"], b"",
                           monkeypatch, capsys)
    assert status == 0 and out.count("\n") == 1, err
    assert read_input(str(src)) == ["caf\ufffd ."]


def test_translate_streams_its_output_a_chunk_at_a_time(model_dir, monkeypatch, capsys):
    """Memory flat in the number of lines: the lines go to the decoder CHUNK_LINES at a time, each chunk written
    before the next is decoded (before: every result held until the run ended). The output is the one
    whole-input call's, line indices of the n-best TSV counted across chunks."""
    from transformer_hub.cli import translate as translate_cli
    from transformer_hub.decoding import generate
    from transformer_hub.text import pipeline

    monkeypatch.setattr(translate_cli, "CHUNK_LINES", 3)
    lines = [f"a dog runs {n} ." if n % 4 else "" for n in range(8)]
    calls, real = [], pipeline.generate_texts

    def counted(model, texts, *args, **kwargs):
        calls.append(len(texts))
        return real(model, texts, *args, **kwargs)

    monkeypatch.setattr(pipeline, "generate_texts", counted)
    status, out, err = run(["translate", "--model", str(model_dir), "--max-length", "4", "--strategy", "beam",
                            "--n-best", "2"], "\n".join(lines).encode(), monkeypatch, capsys)
    assert status == 0, err
    assert calls == [3, 3, 2]
    rows = [row.split("\t") for row in out.rstrip("\n").split("\n")]
    expected = generate(random_model(), lines, strategy="beam", beam_size=4, n_best=2, max_length=4)
    assert [(int(r[0]), r[4]) for r in rows] == [(i, h.text) for i, r in enumerate(expected) for h in r.hypotheses]
