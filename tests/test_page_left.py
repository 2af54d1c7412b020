"""A page visitor who leaves stops their work, as a REST client does (``space/serving/leaving.py``): the closed
page's heartbeat marks its session left (Gradio's ``unload``), and an event of a session that has left decodes
nothing; the answer nobody reads is a one-line "Stopped", never a traceback in the log."""
from __future__ import annotations

import logging
import time

import httpx
import pytest

gradio_client = pytest.importorskip("gradio_client")

from helpers.space_fixtures import LIMITS, app_models, model_for_tests, running_app  # noqa: E402
from space.serving.leaving import DEPARTED, Departures  # noqa: E402


@pytest.fixture(scope="module")
def app(request):
    with running_app(model_for_tests(*app_models(request)), LIMITS) as running:
        yield running


def translate(client, app, text: str):
    return client.predict(text, app.model, "beam", 4, 0.6, 1.0, 1.0, 0, "en", api_name="/translate")


def test_a_closed_pages_heartbeat_marks_its_session_left(app):
    session = "closed-page-session"
    assert not DEPARTED.gone(session)
    with httpx.stream("GET", f"{app.url}gradio_api/heartbeat/{session}", timeout=10) as stream:
        assert next(stream.iter_text()).startswith("data: ALIVE")  # the page's session is open
    deadline = time.monotonic() + 15  # the server sees the closed stream at once; unload runs in the background
    while not DEPARTED.gone(session):
        assert time.monotonic() < deadline, "the closed page's session was never marked left"
        time.sleep(0.05)


def test_an_event_of_a_session_that_left_decodes_nothing_and_logs_one_line(app, caplog):
    client = gradio_client.Client(app.url, verbose=False)
    assert translate(client, app, "A dog runs.")[0]  # while the page is open: translated
    batcher = app.demo.space_context.decoder.batcher
    calls = batcher.calls
    DEPARTED.leave(client.session_hash)  # what its page's unload does when it closes
    with caplog.at_level(logging.INFO), pytest.raises(Exception, match="Stopped: the page that asked"):
        translate(client, app, "A dog runs. A cat sleeps.")
    assert batcher.calls == calls
    assert any("stopped" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    other = gradio_client.Client(app.url, verbose=False)  # another visitor's session is not affected
    assert translate(other, app, "A dog runs.")[0]


def test_departures_are_remembered_for_a_while_and_never_grow_without_bound():
    departures = Departures(keep_seconds=3600, most=3)
    for session in ("a", "b", "c", "d"):
        departures.leave(session)
    assert [departures.gone(s) for s in "abcd"] == [False, True, True, True]  # the oldest forgotten first
    assert departures.watcher(None) is None and not departures.gone("") and not departures.gone(None)
    assert departures.watcher("d")() and not departures.watcher("e")()
    quick = Departures(keep_seconds=0.0)
    quick.leave("x")
    time.sleep(0.01)
    quick.leave("y")  # a later departure forgets those older than keep_seconds
    assert not quick.gone("x") and quick.gone("y")
