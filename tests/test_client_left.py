"""A REST client that leaves stops its work: the route's thread sees ``cancelled()`` (space/rest/input.py's
``run_watched``), the decoder's queue decodes no next part of its sentences (``batching.Cancelled``), and the answer
nobody reads is a 499, never a 500 with a traceback."""
from __future__ import annotations

import threading

import anyio
import pytest

from helpers.space_fixtures import model_context  # noqa: I001 - puts the repository root on sys.path
from space.hosting.limits import Limits
from space.rest.input import refusal, run_watched
from space.rest.routes import RestAPI
from space.serving.batching import Cancelled


class Request:
    """A request whose client is there for ``answers`` looks, then gone."""

    def __init__(self, answers: int) -> None:
        self.looks, self.answers = 0, answers

    async def is_disconnected(self) -> bool:
        self.looks += 1
        return self.looks > self.answers


def test_the_work_sees_its_client_leave_and_a_client_that_stays_is_never_cancelled():
    def wait_for_leaving(cancelled):
        stop = threading.Event()
        while not cancelled():  # by construction: the watcher sets it once the client has gone
            assert not stop.wait(0.01) and request.looks < 10_000
        return request.looks

    request = Request(answers=2)
    assert anyio.run(run_watched, request, wait_for_leaving) == 3  # cancelled at the first look that found it gone
    staying = Request(answers=10 ** 9)
    assert anyio.run(run_watched, staying, lambda cancelled: cancelled()) is False


def test_an_error_of_the_work_comes_out_as_itself():
    def broken(cancelled):
        raise ValueError("beam size must be positive")

    with pytest.raises(ValueError, match="beam size must be positive"):
        anyio.run(run_watched, Request(answers=10 ** 9), broken)


def test_work_stopped_for_a_client_that_left_is_a_499_not_a_server_fault(caplog):
    answer = refusal(Cancelled("the client left before its sentences were decoded"), "translate text", "/translate")
    assert (answer.status, answer.message) == (499, "Cannot translate text: the client left before its sentences "
                                                    "were decoded")
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


@pytest.fixture
def ctx(tmp_path, make_model):
    with model_context(tmp_path / "models", make_model(), Limits()) as context:
        yield context


def test_translate_hands_cancelled_to_the_decoder(ctx):
    """``/translate``'s work with its client gone: no sentence reaches the decoding worker."""
    calls = ctx.decoder.batcher.calls
    with pytest.raises(Cancelled):
        RestAPI(ctx).translate({"q": "A dog runs. A cat sleeps.", "source": "en", "target": "de"}, lambda: True)
    assert ctx.decoder.batcher.calls == calls
    assert RestAPI(ctx).translate({"q": "A dog runs.", "source": "en", "target": "de"}, lambda: False)["translatedText"]
