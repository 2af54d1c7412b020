"""space.decode_process: ``generate`` in a child process equals the in-process call and survives the child dying."""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

if str(Path(__file__).resolve().parents[1]) not in sys.path:  # `space` lives at the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from space.decode_process import DecodeProcess  # noqa: E402
from transformer_hub import Transformer  # noqa: E402
from transformer_hub.decoding import DecodingConfig, generate  # noqa: E402

from test_app import _model_source  # noqa: E402

TEXTS = ["A man rides a bike.", "Two dogs play in the snow near a red house."]


@pytest.fixture(scope="module")
def model_dir(request):
    from space.devmodel import model_for_tests

    return model_for_tests(*_model_source(request))


@pytest.fixture(scope="module")
def decoder():
    process = DecodeProcess(torch_threads=1)
    yield process
    process.close()


def test_child_decodes_like_the_library_in_this_process(model_dir, decoder):
    config = DecodingConfig(strategy="beam", beam_size=3, n_best=2, return_attention=True, max_length=30)
    got = decoder.generate(str(model_dir), None, TEXTS, config)
    expected = generate(Transformer.from_pretrained(str(model_dir)), TEXTS, config)
    assert [r.text for r in got] == [r.text for r in expected]
    for mine, theirs in zip(got, expected):
        assert [h.tokens for h in mine.hypotheses] == [h.tokens for h in theirs.hypotheses]
        assert [h.score for h in mine.hypotheses] == pytest.approx([h.score for h in theirs.hypotheses], abs=1e-4)
        assert mine.best.attention.shape == theirs.best.attention.shape


def test_a_dead_child_fails_one_request_clearly_and_the_next_one_works(model_dir, decoder):
    config = DecodingConfig(max_length=10)
    before = [r.text for r in decoder.generate(str(model_dir), None, TEXTS, config)]  # the child is up
    (child,) = decoder._executor._processes  # the one worker process
    os.kill(child, signal.SIGKILL)
    with pytest.raises(RuntimeError, match="decoding process stopped unexpectedly"):
        decoder.generate(str(model_dir), None, TEXTS, config)
    assert [r.text for r in decoder.generate(str(model_dir), None, TEXTS, config)] == before  # a fresh child


def test_a_model_the_child_cannot_load_reports_why(tmp_path, decoder):
    from transformer_hub.hub import CheckpointError

    with pytest.raises(CheckpointError, match="has no config.json"):  # the child's exception, as raised there
        decoder.generate(str(tmp_path), None, TEXTS[:1], DecodingConfig())


def test_the_child_exits_when_the_server_is_killed(model_dir, tmp_path):
    """A server stopped by SIGKILL runs no clean-up: its decoding child must still go away."""
    import subprocess
    import time

    script = tmp_path / "server.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
        "from space.decode_process import DecodeProcess\n"
        "from transformer_hub.decoding import DecodingConfig\n"
        "if __name__ == '__main__':\n"
        "    d = DecodeProcess()\n"
        f"    d.generate({str(model_dir)!r}, None, ['A dog.'], DecodingConfig(max_length=5))\n"
        "    print(*d._executor._processes, flush=True)\n"
        "    sys.stdin.read()\n")
    server = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    child = int(server.stdout.readline())
    os.kill(child, 0)  # alive
    server.kill()
    server.wait(10)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(child, signal.SIGKILL)
    pytest.fail("the decoding child outlived its server")
