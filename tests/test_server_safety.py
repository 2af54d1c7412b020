"""The public server as a hostile visitor tries it: ``build_app`` (page and REST routes) on loopback.

No file it was not given is read, no request freezes it, slow clients do not lock out the others, every
mistake is a 4xx JSON answer, text without words comes back unchanged and a batch answers item by item.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from helpers.space_fixtures import ROOT, model_for_tests, multilingual_for_tests, serving
from space.hosting.limits import Limits  # noqa: E402
from space.rest.routes import RestSettings  # noqa: E402

LIMITS = Limits(max_chars=300, max_lines=6, max_sentences=6, max_output_tokens=40, max_beam=6, max_models=4,
                max_file_bytes=2000)
SETTINGS = RestSettings(max_body_bytes=8192, queue=4, body_timeout=3.0)
FILE_ARGS = ["auto", "beam", 4, 0.6, 1.0, 0.9, 0, "en", "de", "auto", False, "auto"]  # /translate_file's options after the file


@pytest.fixture(scope="module")
def served(request, tmp_path_factory):
    from helpers.corpus import cache_folder

    cache = cache_folder(request, "space")
    uploads = tmp_path_factory.mktemp("uploads")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADIO_TEMP_DIR", str(uploads))
        with serving([model_for_tests(cache), multilingual_for_tests(cache)], LIMITS, SETTINGS) as running:
            running.uploads = uploads
            yield running


def rest(served, path, params=None, *, body=None, method="POST", timeout=60):
    """(status, parsed JSON) of one REST request; ``params`` go as JSON unless ``body`` (bytes) is given."""
    data = body if body is not None else (json.dumps(params).encode() if params is not None else None)
    request = urllib.request.Request(served.url + path.lstrip("/"), data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data is not None else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def gradio_call(served, api: str, data: list, timeout: float = 60):
    """A raw Gradio API call (as curl makes it): (the event's kind, "complete" or "error", and its data)."""
    post = urllib.request.Request(served.url + f"gradio_api/call/{api}", data=json.dumps({"data": data}).encode(),
                                  headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(post, timeout=30) as response:
        event = json.loads(response.read())["event_id"]
    with urllib.request.urlopen(served.url + f"gradio_api/call/{api}/{event}", timeout=timeout) as response:
        stream = response.read().decode()
    kinds = [line[len("event: "):] for line in stream.splitlines() if line.startswith("event: ")]
    payloads = [line[len("data: "):] for line in stream.splitlines() if line.startswith("data: ")]
    return kinds[-1], json.loads(payloads[-1])


def file_arg(path) -> dict:
    return {"path": str(path), "meta": {"_type": "gradio.FileData"}}


def cached_bytes(folder: Path) -> list:
    return [p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]


# ----------------------------------------------------------------------------- only uploads are read
def test_a_file_never_uploaded_is_refused_and_nothing_of_it_reaches_the_cache(served, tmp_path):
    import tempfile

    secret = Path(tempfile.gettempdir()) / f"not-uploaded-{os.getpid()}.txt"
    secret.write_text("A secret dog runs.", encoding="utf-8")
    link = served.uploads / "link.txt"
    link.symlink_to(secret)
    try:
        for path in (secret, ROOT / "requirements.txt", "/etc/hostname", link, "/dev/zero"):
            kind, data = gradio_call(served, "translate_file", [file_arg(path), *FILE_ARGS])
            assert kind == "error", (path, data)
        contents = cached_bytes(served.uploads)
        assert b"A secret dog runs." not in contents and (ROOT / "requirements.txt").read_bytes() not in contents
        assert Path("/etc/hostname").read_bytes() not in contents
    finally:
        secret.unlink()
        link.unlink()


def upload(served, name: str, content: bytes):
    """POST /gradio_api/upload as the page does: (status, the server's path of the file or its refusal)."""
    boundary = "----th-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n"
            f"Content-Type: text/plain\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(served.url + "gradio_api/upload", data=body, method="POST",
                                     headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())[0]
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_an_upload_is_translated_then_deleted_and_one_over_the_size_limit_is_refused(served):
    status, path = upload(served, "story.txt", b"A dog runs.\n\nA man sits on a bench.\n")
    assert status == 200 and Path(path).is_file()
    kind, (download, note, shown) = gradio_call(served, "translate_file", [file_arg(path), *FILE_ARGS])
    assert kind == "complete" and "2 sentence(s) translated" in note
    written = Path(download["path"]).read_text(encoding="utf-8")
    assert written.count("\n\n") == 1 and shown["value"] == written  # the page shows what it offers for download
    assert not Path(path).exists()  # the upload is gone once translated
    kind, data = gradio_call(served, "translate_file", [file_arg(path), *FILE_ARGS])
    assert kind == "error"
    before = sorted(p.name for p in served.uploads.rglob("*"))
    status, answer = upload(served, "big.txt", b"A dog runs. " * 200)  # 2,400 bytes, the limit is 2,000
    assert status == 413 and "maximum allowed size" in answer
    assert sorted(p.name for p in served.uploads.rglob("*")) == before  # nothing of it left behind
    status, path = upload(served, "doc.pdf", b"%PDF-1.4")
    kind, data = gradio_call(served, "translate_file", [file_arg(path), *FILE_ARGS])
    assert kind == "error" and not Path(path).exists()  # refused, and deleted all the same


# ----------------------------------------------------------------------------- nothing blocks the event loop
@pytest.mark.parametrize("where", ["temp", "uploads"])
def test_a_fifo_is_refused_unopened_and_the_server_keeps_answering(served, tmp_path, where):
    import tempfile

    folder = Path(tempfile.gettempdir()) if where == "temp" else served.uploads
    fifo = folder / f"pipe-{os.getpid()}.txt"
    os.mkfifo(fifo)
    outcome = {}
    try:
        call = threading.Thread(target=lambda: outcome.update(
            answer=gradio_call(served, "translate_file", [file_arg(fifo), *FILE_ARGS], timeout=30)))
        call.start()
        time.sleep(0.5)  # the call has reached the server
        start = time.monotonic()
        status, languages = rest(served, "/languages", method="GET", timeout=5)
        assert status == 200 and languages and time.monotonic() - start < 1.0
        call.join(20)
        assert outcome["answer"][0] == "error"
    finally:
        if call.is_alive():  # a reader is stuck on the FIFO: release it, or every later test hangs
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        fifo.unlink()


# ----------------------------------------------------------------------------- slow clients
def _whole_reply(sock: socket.socket) -> bytes:
    """One HTTP response read off a raw socket: its head and all of its body (TCP may deliver them apart)."""
    reply = b""
    while True:
        head, sep, body = reply.partition(b"\r\n\r\n")
        if sep:
            lengths = [line.split(b":", 1)[1] for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")]
            if lengths and len(body) >= int(lengths[0]):
                return reply
        chunk = sock.recv(4096)
        if not chunk:
            return reply
        reply += chunk


def test_slow_bodies_at_the_queue_size_do_not_lock_out_a_normal_client(served):
    host, port = served.url.split("//")[1].rstrip("/").split(":")
    head = (b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n{")
    tricklers = [socket.create_connection((host, int(port)), timeout=30) for _ in range(SETTINGS.queue)]
    try:
        for sock in tricklers:
            sock.sendall(head)
        time.sleep(0.3)
        for _ in range(2):  # still trickling: one more byte each
            for sock in tricklers:
                sock.sendall(b" ")
            status, answer = rest(served, "/translate", {"q": "A dog runs.", "source": "en", "target": "de"})
            assert status == 200 and answer["translatedText"], answer
            assert rest(served, "/detect", {"q": "Ein Hund rennt über die Wiese."})[0] == 200
        for sock in tricklers:  # past the body deadline: each is answered 408, in JSON
            reply = _whole_reply(sock)
            assert reply.startswith(b"HTTP/1.1 408"), reply
            assert json.loads(reply.split(b"\r\n\r\n", 1)[1]) == {
                "error": f"The request body did not arrive within {SETTINGS.body_timeout:g} seconds."}
    finally:
        for sock in tricklers:
            sock.close()


# ----------------------------------------------------------------------------- every error a 4xx JSON body
@pytest.mark.parametrize("body, message", [
    (b'{"q": "A dog.", "source": "en", "target": "\\ud800"}',
     "Invalid request: target is not valid Unicode text (it holds a lone surrogate)"),
    (b'{"q": "A dog.", "source": "\\udfff", "target": "de"}', "Invalid request: source is not valid Unicode text"),
    (b'{"q": "A dog.", "source": "en", "target": "de", "format": "\\ud83d"}',
     "Invalid request: format is not valid Unicode text"),
    (b'{"q": ["A dog.", "\\ud800 runs"], "source": "en", "target": "de"}', "Invalid request: q[1] is not valid Unicode"),
    (b'{"q": ' + b"[" * 100_000 + b"]" * 100_000 + b', "source": "en", "target": "de"}',
     "Invalid JSON format: nested too deeply"),
    (b'{"q": {"a": 1}, "source": "en", "target": "de"}', "Invalid request: q must be a text or a list of texts, got dict"),
    (b'{"q": ["A dog.", 5], "source": "en", "target": "de"}', "Invalid request: q[1]: q must be a text or a list"),
    (b'{"q": "A dog.", "source": ["en"], "target": "de"}', "['en'] is not supported"),
    (b'{"q": "A dog.", "source": "en", "target": "de", "alternatives": [1]}', "alternatives parameter is not a number"),
])
def test_hostile_bodies_get_a_400_in_json(served, body, message, monkeypatch):
    monkeypatch.setattr(served.app.state.rest, "settings", RestSettings(max_body_bytes=1 << 18, queue=4))  # the default
    status, answer = rest(served, "/translate", body=body)
    assert status == 400 and set(answer) == {"error"} and message in answer["error"], answer


def test_a_nested_body_on_detect_is_a_400_too(served):
    status, answer = rest(served, "/detect", body=b'{"q": ' + b"[" * 3000 + b"]" * 3000 + b"}")  # under 8,192 bytes
    assert status == 400 and answer == {"error": "Invalid JSON format: nested too deeply"}


# ----------------------------------------------------------------------------- text without words
WORDLESS = ["😀 🎉", "♪ ♪", "...", "12:45", "https://example.org/x", "anna@example.cz"]  # the limit: 6 lines


def test_text_without_words_comes_back_unchanged_from_rest_and_the_page(served):
    import gradio_client

    status, answer = rest(served, "/translate", {"q": WORDLESS, "source": "en", "target": "de"})
    assert status == 200 and answer["translatedText"] == WORDLESS, answer
    status, answer = rest(served, "/translate", {"q": "😀 🎉", "source": "auto", "target": "de"})
    assert status == 200 and answer["translatedText"] == "😀 🎉"
    status, mixed = rest(served, "/translate", {"q": "😀 A dog runs. 12:45", "source": "en", "target": "de"})
    _, alone = rest(served, "/translate", {"q": "A dog runs.", "source": "en", "target": "de"})
    assert mixed["translatedText"] == f"😀 {alone['translatedText']} 12:45"
    status, inside = rest(served, "/translate", {"q": ["Mail anna@example.cz now.", "Meet me at 12:45 😀 by the river."],
                                                 "source": "en", "target": "de"})
    assert status == 200 and "anna@example.cz" in inside["translatedText"][0], inside
    assert all(piece in inside["translatedText"][1] for piece in ("12:45", "😀")), inside
    page = gradio_client.Client(served.url, verbose=False)
    for text, source in (("😀 🎉", "en"), ("12:45", "en"), ("♪ ♪", "auto")):
        translation, _, _ = page.predict(text=text, source_lang=source, target_lang="de", api_name="/translate")
        assert translation == text


# ----------------------------------------------------------------------------- batches answer per item
def test_a_mixed_batch_answers_per_item(served):
    batch = ["A dog runs.", "Ein Hund rennt über die Wiese.", "🎉", "Hi!", "A dog."]
    status, answer = rest(served, "/translate", {"q": batch, "source": "auto", "target": "de"})
    assert status == 200, answer
    _, alone = rest(served, "/translate", {"q": ["A dog runs.", "A dog."], "source": "en", "target": "de"})
    assert answer["translatedText"] == [alone["translatedText"][0], batch[1], batch[2], batch[3],
                                        alone["translatedText"][1]]  # "Hi!": too short to detect, as it was
    assert [d["language"] for d in answer["detectedLanguage"][:2]] == ["en", "de"]
    status, answer = rest(served, "/translate", {"q": ["<p>Hi!</p>", "<p>A dog runs.</p>"], "source": "auto",
                                                 "target": "de", "format": "html"})
    assert status == 200 and answer["translatedText"] == ["<p>Hi!</p>", f"<p>{alone['translatedText'][0]}</p>"]
    status, answer = rest(served, "/translate", {"q": ["A dog.", "El perro corre por el parque con su dueño."],
                                                 "source": "auto", "target": "de"})
    assert status == 400 and answer["error"].startswith("q[1]: es is not supported"), answer
    status, answer = rest(served, "/translate", {"q": ["A dog.", "A cat.", "a" * 301], "source": "en", "target": "de"})
    assert status == 400 and answer["error"].startswith("Invalid request: q[2]: Line 1 is too long"), answer


# ----------------------------------------------------------------------------- logs
def test_mistakes_and_disconnects_log_one_line_each_and_leak_nothing(served, caplog, capfd):
    import logging

    caplog.set_level(logging.INFO, logger="space")
    kind, data = gradio_call(served, "translate_file", [file_arg("/etc/hostname"), *FILE_ARGS])
    assert kind == "error"
    kind, data = gradio_call(served, "translate", ["A dog."])  # too few (it takes 14: "Best quality" and the glossary last)
    assert kind == "error" and data["error"] == ("An event handler (wrapped) didn't receive enough input values "
                                                 "(needed: 15, got: 1).")  # no component reprs, no addresses
    assert rest(served, "/translate", {"q": "A dog.", "source": "en", "target": "xx"})[0] == 400
    host, port = served.url.split("//")[1].rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:  # a client gone mid-body
        sock.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    time.sleep(0.5)
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("space")]
    assert "event refused: Cannot move /etc/hostname to the gradio cache dir because it was not uploaded by a user." \
        in messages
    assert any(m.startswith("event refused: An event handler (wrapped) didn't receive enough") for m in messages)
    assert "REST /translate: 400 xx is not supported" in messages
    assert "REST /translate: 400 The client disconnected before its request body arrived." in messages
    assert not any(r.exc_info for r in caplog.records)
    assert "Traceback" not in capfd.readouterr().err


# ----------------------------------------------------------------------------- docs/hosting.md's table
def test_the_hosting_page_lists_every_setting_of_the_server_with_its_default():
    import dataclasses
    import re

    from space.hosting import access, connections
    from space.serving import context, model_store as models_store
    from space.page import demo
    from space.rest import files
    from space import server
    from transformer_hub import store

    text = (ROOT / "docs" / "hosting.md").read_text(encoding="utf-8")
    table = text[text.index("| Variable | Default |"):]
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| `?([^`|]*?)`?(?: \([^|]*\))? \|", table, re.M))
    expected = {f"SPACE_{f.name.upper()}": str(f.default) for f in dataclasses.fields(Limits)}
    rest = RestSettings()
    expected.update({"SPACE_MAX_BODY_BYTES": str(rest.max_body_bytes), "SPACE_BODY_TIMEOUT": str(rest.body_timeout),
                     "SPACE_CORS_ORIGINS": ",".join(rest.cors_origins), "SPACE_REST_QUEUE": str(demo.QUEUE_MAX_SIZE),
                     "SPACE_QUEUE_SIZE": str(demo.QUEUE_MAX_SIZE), "SPACE_CONCURRENCY": str(demo.CONCURRENCY),
                     "SPACE_TORCH_THREADS": str(demo.TORCH_THREADS), "SPACE_DECODE_WORKERS": str(context.DECODE_WORKERS),
                     "SPACE_MAX_CONNECTIONS": str(server.connection_limits()["limit_concurrency"]),
                     "SPACE_KEEP_ALIVE": str(server.connection_limits()["timeout_keep_alive"]),
                     connections.HEADER_TIMEOUT_ENV: str(connections.HEADER_TIMEOUT),
                     connections.PER_CLIENT_ENV: str(connections.PER_CLIENT),
                     connections.UPLOAD_TIMEOUT_ENV: str(connections.UPLOAD_TIMEOUT),
                     "GRADIO_SERVER_NAME": server.host_and_port()[0], "GRADIO_SERVER_PORT": str(server.host_and_port()[1]),
                     models_store.MODELS_DIR_ENV: "space/models", "SPACE_FILE_TTL": str(files.FILE_TTL),
                     store.DB_ENV: store.DEFAULT_DB})
    keys = access.AccessSettings()
    expected.update({"SPACE_REQ_LIMIT": str(keys.req_limit), "SPACE_CHAR_LIMIT": str(keys.char_limit),
                     "SPACE_API_KEYS": str(keys.api_keys), "SPACE_REQUIRE_API_KEY": str(keys.require_key),
                     "SPACE_SUGGESTIONS": str(keys.suggestions),
                     "SPACE_SUGGESTIONS_MAX_MB": f"{keys.suggestions_max_mb:g}",
                     "SPACE_SUGGESTIONS_CLIENT_MB": f"{keys.suggestions_client_mb:g}"})
    for name, default in expected.items():
        if name not in os.environ:  # set here: the code's value is not its default
            assert rows.get(name) == default, (name, rows.get(name), default)
    named = set()
    for path in [*(ROOT / "space").rglob("*.py"), ROOT / "app.py"]:
        named |= set(re.findall(r"\b(SPACE_[A-Z_]+[A-Z])\b", path.read_text(encoding="utf-8")))
    named |= {f"SPACE_{f.name.upper()}" for f in dataclasses.fields(Limits)}
    assert named <= set(rows), sorted(named - set(rows))  # every variable the code reads is in the table
