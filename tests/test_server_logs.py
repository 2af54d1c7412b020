"""space/hosting/logs.py: one line per visitor's mistake or disconnect, tracebacks for faults, a rate limit."""
from __future__ import annotations

import logging

import gradio as gr
import pytest
from gradio.exceptions import InvalidPathError
from starlette.requests import ClientDisconnect


from space.hosting import logs


def _handler(filter_):
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    handler.addFilter(filter_)
    log = logging.getLogger("test.ratelimit")
    log.handlers, log.propagate = [handler], False
    log.setLevel(logging.INFO)
    return log, records


def test_the_rate_limit_drops_a_flood_and_says_how_much_it_dropped(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(logs.time, "monotonic", lambda: clock[0])
    log, records = _handler(logs.RateLimit(burst=3, window=10.0))
    for n in range(10):
        log.info("refused %d", n)
    log.warning("another level has its own budget")
    assert [r.getMessage() for r in records] == ["refused 0", "refused 1", "refused 2",
                                                 "another level has its own budget"]
    clock[0] += 10.0
    log.info("refused again")
    assert records[-1].getMessage() == "(7 similar lines dropped) refused again"


def test_a_visitors_mistake_is_one_line_and_a_fault_keeps_its_traceback(caplog):
    shim = logs._Traceback()
    caplog.set_level(logging.INFO, logger="space.server")
    for error in (gr.Error("Please enter a sentence."), InvalidPathError("Cannot move /etc/hostname: not uploaded"),
                  ClientDisconnect()):
        try:
            raise error
        except Exception:  # noqa: BLE001 - what Gradio's queue catches
            shim.print_exc()
    try:
        raise RuntimeError("a bug\nwith detail")
    except RuntimeError:
        shim.print_exc()
    lines = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert lines == [("INFO", "event refused: Please enter a sentence.", False),
                     ("INFO", "event refused: Cannot move /etc/hostname: not uploaded", False),
                     ("INFO", "event refused: ClientDisconnect", False),
                     ("ERROR", "event failed", True)]


def test_uvicorns_disconnect_traceback_becomes_one_line():
    try:
        raise ClientDisconnect()
    except ClientDisconnect as exc:
        record = logging.LogRecord("uvicorn.error", logging.ERROR, __file__, 1, "Exception in ASGI application",
                                   (), (type(exc), exc, exc.__traceback__))
    assert logs.OneLineDisconnects().filter(record)
    assert record.exc_info is None and record.levelname == "INFO"
    assert record.getMessage() == "client disconnected mid-request (ClientDisconnect)"


@pytest.mark.parametrize("message, shown", [("one line", "one line"), ("first\n  [<obj at 0x7f>]", "first"),
                                            ("", "ValueError")])
def test_gradios_messages_are_cut_to_their_first_line(message, shown):
    assert logs._error_payload(ValueError(message), True)["error"] == shown
    assert logs._error_payload(gr.Error("ours\nkept whole"), True)["error"] == "ours\nkept whole"


def test_a_line_break_in_a_visitors_field_cannot_forge_a_log_line():
    record = logging.LogRecord("space.rest.routes", logging.INFO, __file__, 1, "REST %s: %d %s",
                               ("/translate", 400, "en\n2026-01-01 ERROR forged\r\u2028x is not supported"), None)
    line = logs.OneLineFormatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert line == ("INFO space.rest.routes: REST /translate: 400 en\\n2026-01-01 ERROR forged\\r\\u2028x is not "
                    "supported")
    try:
        raise RuntimeError("a fault")
    except RuntimeError as exc:
        fault = logging.LogRecord("space", logging.ERROR, __file__, 1, "failed", (), (RuntimeError, exc,
                                                                                       exc.__traceback__))
    assert logs.OneLineFormatter("%(message)s").format(fault).count("\n") >= 2  # a traceback keeps its lines


def test_gradios_refusals_of_a_visitors_file_input_are_one_line_and_name_no_folder_of_the_server(caplog):
    import os

    def preprocess_data(value):  # where Gradio reads the inputs: a download it refused, a FileData without path
        raise ValueError(f"Hostname {value} failed validation")

    shim = logs._Traceback()
    caplog.set_level(logging.INFO, logger="space.server")
    try:
        preprocess_data("169.254.169.254")
    except ValueError:
        shim.print_exc()
    assert [(r.levelname, r.getMessage(), r.exc_info) for r in caplog.records] == [
        ("INFO", "event refused: Hostname 169.254.169.254 failed validation", None)]
    resolved = os.path.join(os.getcwd(), "x.docx")
    error = InvalidPathError(f"Cannot move {resolved} to the gradio cache dir because it was not uploaded by a user.")
    shown = logs._error_payload(error, True)["error"]
    assert shown == "Cannot move x.docx to the gradio cache dir because it was not uploaded by a user."
    assert logs.hide_paths(f"{logs.sys.prefix}/lib/python3/site.py and /etc/hostname") == \
        "lib/python3/site.py and /etc/hostname"
