"""LibreTranslate's REST routes (space/rest/routes.py) on the page's server (space/server.py), over HTTP on loopback."""
from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request

import pytest

from helpers.space_fixtures import model_for_tests, multilingual_for_tests, serving
from space.hosting.limits import Limits
from space.rest.routes import RestSettings

LIMITS = Limits(max_chars=300, max_lines=6, max_sentences=6, max_output_tokens=60, max_beam=6, max_models=4)
SETTINGS = RestSettings(max_body_bytes=8192, queue=3)
SENTENCE = "A man is riding a bicycle."


@pytest.fixture(scope="module")
def served(request):
    from helpers.corpus import cache_folder

    cache = cache_folder(request, "space")
    with serving([model_for_tests(cache), multilingual_for_tests(cache)], LIMITS, SETTINGS) as running:
        yield running


def call(served, path, params=None, *, body=None, content_type=None, method="POST", headers=None):
    """(status, parsed JSON, headers) of one request; ``params`` go as JSON unless ``body`` is given."""
    if params is not None and body is None:
        body, content_type = json.dumps(params).encode(), "application/json"
    request = urllib.request.Request(served.url.rstrip("/") + path, data=body, method=method,
                                     headers={**({"Content-Type": content_type} if content_type else {}),
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read()), response.headers
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), error.headers


def expected(served, answer, texts, source, target, n_best=1):
    """What the library's ``generate`` gives for ``texts`` with the model and engine the answer names."""
    from transformer_hub import Transformer
    from transformer_hub.decoding import DecodingConfig, generate

    model = Transformer.from_pretrained(served.demo.space_context.store.spec(answer["model"]).source)
    config = DecodingConfig(strategy="beam", beam_size=max(4, n_best), length_penalty=0.6, n_best=n_best,
                            max_length=LIMITS.max_output_tokens)
    return generate(model, texts, config, src_lang=source, tgt_lang=target, engine=answer["engine"])


def test_libretranslatepy_translates_detects_and_lists_languages(served):
    from libretranslatepy import LibreTranslateAPI

    lt = LibreTranslateAPI(served.url)
    text = lt.translate(SENTENCE, "en", "de")
    status, answer, _ = call(served, "/translate", {"q": SENTENCE, "source": "en", "target": "de"})
    assert status == 200 and answer["translatedText"] == text and answer["engine"] in ("pytorch", "ctranslate2")
    assert text == expected(served, answer, [SENTENCE], "en", "de")[0].text
    german = "Ein Hund rennt über die Wiese."
    auto = lt.translate(german, "auto", "en")
    status, answer, _ = call(served, "/translate", {"q": german, "source": "auto", "target": "en"})
    assert answer["detectedLanguage"]["language"] == "de" and 50 < answer["detectedLanguage"]["confidence"] <= 100
    assert auto == answer["translatedText"] == expected(served, answer, [german], "de", "en")[0].text
    (found,) = lt.detect("Un chien court dans la neige.")
    assert found["language"] == "fr" and 50 < found["confidence"] <= 100
    languages = lt.languages()
    assert [entry["code"] for entry in languages] == ["en", "de", "fr", "cs"]
    assert languages[0] == {"code": "en", "name": "English", "targets": ["de", "fr", "cs"]}


def test_shapes_for_a_string_a_list_and_alternatives(served):
    status, one, _ = call(served, "/translate", {"q": SENTENCE, "source": "en", "target": "de", "alternatives": 3})
    assert status == 200 and isinstance(one["translatedText"], str) and "detectedLanguage" not in one
    (result,) = expected(served, one, [SENTENCE], "en", "de", n_best=4)
    assert [one["translatedText"], *one["alternatives"]] == [h.text for h in result.hypotheses]
    texts = [SENTENCE, "Two dogs play in the snow."]
    status, many, _ = call(served, "/translate", {"q": texts, "source": "auto", "target": "de", "alternatives": 3})
    assert status == 200 and len(many["translatedText"]) == 2 and many["translatedText"][0] == one["translatedText"]
    assert [len(a) for a in many["alternatives"]] == [3, 3] and many["alternatives"][0] == one["alternatives"]
    assert [d["language"] for d in many["detectedLanguage"]] == ["en", "en"]
    plain = {"q": SENTENCE, "source": "en", "target": "de"}
    _, as_json, _ = call(served, "/translate", plain)
    _, as_form, _ = call(served, "/translate", body=urllib.parse.urlencode(plain).encode(),
                         content_type="application/x-www-form-urlencoded")
    _, as_query, _ = call(served, "/translate?" + urllib.parse.urlencode(plain), body=b"")
    _, as_auto, _ = call(served, "/translate", {**plain, "model": "auto"})  # our extension, as the page reads it
    assert as_json == as_form == as_query == as_auto and "alternatives" not in as_json


def test_a_mixed_batch_reports_the_model_of_each_text(served):
    """English and French to German with source auto: each text goes to the best model of its own direction,
    and the answer names the model (and engine) per text, a list as q is one."""
    texts = [SENTENCE, "Un homme descend la rue à vélo et un chien court derrière lui."]
    status, answer, _ = call(served, "/translate", {"q": texts, "source": "auto", "target": "de"})
    assert status == 200 and [d["language"] for d in answer["detectedLanguage"]] == ["en", "fr"]
    chooser = served.demo.space_context.chooser
    assert answer["model"] == [chooser.best("en", "de"), chooser.best("fr", "de")]
    assert answer["model"][1] == "multilingual"  # the one model here that reads French
    assert isinstance(answer["engine"], list) and len(answer["engine"]) == 2
    from transformer_hub.decoding.words import doubt

    store = served.demo.space_context.store
    for i, source in enumerate(("en", "fr")):  # each as the library translates it with its model and engine
        one = {"model": answer["model"][i], "engine": answer["engine"][i]}
        (result,) = expected(served, one, [texts[i]], source, "de")
        assert answer["translatedText"][i] == result.text
        # our unsure flag per text, as /translate_file's: the doubt of its (one) sentence's best hypothesis
        assert answer["unsure"][i] is doubt(result.best, store.tokenizer(one["model"])).unsure()
    single = call(served, "/translate", {"q": texts[1], "source": "auto", "target": "de"})[1]
    assert (single["model"], single["engine"]) == (answer["model"][1], answer["engine"][1])  # one text: one name
    assert single["unsure"] is answer["unsure"][1]


def test_a_mixed_html_batch_is_detected_and_reported_per_document(served):
    """format=html goes through the same pipeline: each page's language from its whole visible text, its
    blocks translated by its direction's model, the answer naming the model per page as plain text does."""
    texts = [SENTENCE, "Un homme descend la rue à vélo et un chien court derrière lui."]
    _, plain, _ = call(served, "/translate", {"q": texts, "source": "auto", "target": "de"})
    status, html, _ = call(served, "/translate", {"q": [f"<p>{t}</p>" for t in texts], "source": "auto",
                                                  "target": "de", "format": "html"})
    assert status == 200 and html["translatedText"] == [f"<p>{t}</p>" for t in plain["translatedText"]]
    assert html["model"] == plain["model"] and html["engine"] == plain["engine"]
    assert html["detectedLanguage"] == plain["detectedLanguage"]


def test_paragraphs_are_split_into_sentences_and_keep_their_layout(served):
    text = "A man is riding a bicycle. Two dogs play in the snow.\n\nA woman sings."
    status, answer, _ = call(served, "/translate", {"q": text, "source": "en", "target": "de"})
    sentences = ["A man is riding a bicycle.", "Two dogs play in the snow.", "A woman sings."]
    outputs = [r.text for r in expected(served, answer, sentences, "en", "de")]
    assert status == 200 and answer["translatedText"] == f"{outputs[0]} {outputs[1]}\n\n{outputs[2]}"


@pytest.mark.parametrize("params, message", [
    ({"source": "en", "target": "de"}, "Invalid request: missing q parameter"),
    ({"q": "A dog.", "target": "de"}, "Invalid request: missing source parameter"),
    ({"q": "A dog.", "source": "en"}, "Invalid request: missing target parameter"),
    ({"q": [], "source": "en", "target": "de"}, "Invalid request: missing q parameter"),
    ({"q": "A dog.", "source": "en", "target": "xx"}, "xx is not supported"),
    ({"q": "A dog.", "source": "zz", "target": "de"}, "zz is not supported"),
    ({"q": "A dog.", "source": "en", "target": "de", "format": "xml"}, "xml format is not supported"),
    ({"q": "A dog.", "source": "en", "target": "de", "alternatives": "abc"},
     "Invalid request: alternatives parameter is not a number"),
    ({"q": "A dog.", "source": "en", "target": "de", "alternatives": 9},
     "Invalid request: alternatives must be between 0 and 5"),
    ({"q": "a" * 301, "source": "en", "target": "de"}, "Line 1 is too long: 301 characters, the limit is 300"),
    ({"q": " ".join(["A dog runs."] * 7), "source": "en", "target": "de"},
     "Invalid request: request (7 sentences) exceeds text limit (6 sentences)"),
    ({"q": ["A dog."] * 7, "source": "en", "target": "de"}, "Invalid request: request (7) exceeds text limit (6)"),
    ({"q": "A dog.", "source": "en", "target": "de", "model": "nope"}, "Unknown model 'nope'"),
    ({"q": "El perro corre por el parque con su dueño.", "source": "auto", "target": "de"}, "es is not supported"),
    ({"q": "A dog.", "source": "en", "target": "de", "engine": "onnx"}, "engine must be one of auto, pytorch"),
    ({"q": "A dog.", "source": "en", "target": "de", "model": []}, "Invalid request: model must be a model name"),
    ({"q": "A dog.", "source": "en", "target": "de", "engine": {}}, "engine must be one of auto, pytorch"),
])
def test_each_error_has_its_status_and_message(served, params, message):
    status, answer, _ = call(served, "/translate", params)
    assert status == 400 and message in answer["error"] and set(answer) == {"error"}, answer


def test_a_pair_no_model_serves_and_a_model_that_does_not_serve_it(served):
    tiny = next(name for name in served.demo.space_context.store.names() if name != "multilingual")
    status, answer, _ = call(served, "/translate", {"q": "A dog.", "source": "en", "target": "fr", "model": tiny})
    assert status == 400 and "does not translate en->fr; it serves en->de" in answer["error"]
    status, answer, _ = call(served, "/translate", {"q": "A dog.", "source": "en", "target": "en"})
    assert status == 400 and answer["error"] == "English (en) is not available as a target language from English (en)"
    status, answer, _ = call(served, "/translate", body=b"[1, 2]", content_type="application/json")
    assert status == 400 and answer == {"error": "Invalid JSON format"}
    status, answer, _ = call(served, "/detect", {"q": ""})
    assert status == 400 and answer == {"error": "Invalid request: missing q parameter"}


def _raw(served, head: bytes, body: bytes) -> bytes:
    """Send ``head`` and the start of a body the server is told is larger, then read its answer (no more sent)."""
    host, port = served.url.split("//")[1].rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head + body)
        data = b""
        while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return data


def test_a_body_over_the_limit_is_refused_without_being_read_whole(served):
    declared = _raw(served, b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Content-Length: 1000000000\r\n\r\n", b'{"q": "' + b"a" * 1000)
    assert declared.startswith(b"HTTP/1.1 413") and b"Request body too large: 1000000000 bytes" in declared
    chunk = b'{"q": "' + b"a" * 9000
    streamed = _raw(served, b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Transfer-Encoding: chunked\r\n\r\n", b"%x\r\n%s\r\n" % (len(chunk), chunk))
    assert streamed.startswith(b"HTTP/1.1 413") and b"over 8192 bytes" in streamed  # the end never came


def test_cors_is_libretranslates_on_the_rest_paths_and_narrowed_by_its_setting(served):
    origin = {"Origin": "http://example.org"}
    for path, method in (("/languages", "GET"), ("/translate", "POST")):
        _, _, headers = call(served, path, {"q": SENTENCE, "source": "en", "target": "de"} if method == "POST" else None,
                             method=method, headers=origin)
        assert headers.get("access-control-allow-origin") == "*", path
    preflight = urllib.request.Request(served.url + "translate", method="OPTIONS",
                                       headers={**origin, "Access-Control-Request-Method": "POST"})
    with urllib.request.urlopen(preflight, timeout=30) as response:
        assert response.status == 200 and "POST" in response.headers["access-control-allow-methods"]
    with urllib.request.urlopen(urllib.request.Request(served.url + "config", headers=origin), timeout=30) as page:
        assert page.headers.get("access-control-allow-origin") != "*"  # the page keeps Gradio's own rules


def test_cors_narrowed_to_the_origins_named(monkeypatch):
    from space.server import build_app
    from starlette.testclient import TestClient

    monkeypatch.setenv("SPACE_CORS_ORIGINS", "https://tools.example, https://other.example")
    settings = RestSettings.from_env()
    assert settings.cors_origins == ("https://tools.example", "https://other.example")
    demo = _bare_demo()
    try:
        client = TestClient(build_app(demo, settings))
        named = client.get("/languages", headers={"Origin": "https://other.example"})
        assert named.headers["access-control-allow-origin"] == "https://other.example"
        assert "access-control-allow-origin" not in client.get("/languages", headers={"Origin": "https://x.example"}).headers
    finally:
        demo.space_context.close()
    monkeypatch.setenv("SPACE_CORS_ORIGINS", "")
    assert RestSettings.from_env().cors_origins == ()  # empty: no CORS headers at all


def _bare_demo():
    import tempfile

    from space.page.demo import build_demo

    with tempfile.TemporaryDirectory() as empty:
        return build_demo([], models_dir=empty)


def test_rest_and_page_requests_with_the_queue_full_get_answers_or_429(served, monkeypatch):
    """One decode held, the shared queue filled: REST gets 429, the page a clear 'busy' error; nothing hangs."""
    ctx = served.demo.space_context
    batcher, pool = ctx.decoder.batcher, ctx.decoder.pool()
    gate, started = threading.Event(), threading.Event()
    generate = pool.generate

    def held(*args, **kwargs):
        started.set()
        assert gate.wait(60)
        return generate(*args, **kwargs)

    monkeypatch.setattr(pool, "generate", held)
    monkeypatch.setattr(batcher, "max_waiting", 2)  # the queue the page and the REST routes share
    monkeypatch.setattr(served.app.state.rest, "settings", RestSettings(max_body_bytes=8192, queue=10))
    try:
        _fill_and_ask(served, batcher, started, gate)
    finally:
        gate.set()


def _fill_and_ask(served, batcher, started, gate):
    import gradio_client

    answers = {}

    def rest(key, text):
        answers[key] = call(served, "/translate", {"q": text, "source": "en", "target": "de"})[:2]

    first = threading.Thread(target=rest, args=("first", SENTENCE))
    first.start()
    assert started.wait(60)  # the first request holds the only decode slot
    waiting = [threading.Thread(target=rest, args=(i, f"Dog number {i} runs.")) for i in range(2)]
    for thread in waiting:
        thread.start()
    assert batcher.wait_until(lambda b: b.waiting == 2, timeout=60)
    status, answer, _ = call(served, "/translate", {"q": "A cat.", "source": "en", "target": "de"})
    assert status == 429 and answer["error"].startswith("Slowdown: the decode queue is full (2 requests waiting)")
    page = gradio_client.Client(served.url, verbose=False)
    with pytest.raises(Exception, match="The server is busy"):
        page.predict(text="A cat.", source_lang="en", target_lang="de", api_name="/translate")
    served.app.state.rest.settings = RestSettings(max_body_bytes=8192, queue=3)  # REST's own bound: 3 are in
    status, answer, _ = call(served, "/translate", {"q": "A cat.", "source": "en", "target": "de"})
    assert status == 429 and answer["error"].startswith("Slowdown: the server is busy (3 requests in progress)")
    gate.set()
    for thread in [first, *waiting]:
        thread.join(120)
        assert not thread.is_alive()
    assert all(answers[key][0] == 200 and answers[key][1]["translatedText"] for key in ("first", 0, 1))
    text, _, note = page.predict(text="A cat.", source_lang="en", target_lang="de", api_name="/translate")
    assert text and "engine" in note  # the page works again once the queue has room
