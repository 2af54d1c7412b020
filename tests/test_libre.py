"""The rest of LibreTranslate's API on ``build_app``, over HTTP on loopback: its web UI's call sequence, format=html,
files of every format, suggestions, API keys and limits, and two client libraries (libretranslatepy,
deep-translator) used unchanged."""
from __future__ import annotations

import io
import json
import re
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import docx
import pptx
import pytest
import requests
import srt
from bs4 import BeautifulSoup

from benchmarks.documents import SUBTITLES, formatted_docx, formatted_epub, formatted_odt, formatted_pptx
from helpers.document_fixtures import docx_shape, epub_shape, odf_shape, pptx_shape
from helpers.space_fixtures import serving, untrained_model_dir
from space.hosting.access import Access, AccessSettings, MovingWindow
from space.hosting.limits import Limits
from transformer_hub.formats import extensions
from transformer_hub.training.data import load_split
from transformer_hub.store import Store

pytestmark = pytest.mark.slow  # one server for the module (about 10 s to start)
LIMITS = Limits(max_chars=400, max_lines=8, max_sentences=24, max_output_tokens=8, max_file_sentences=40)
TEXT = "A dog runs in the park. Two children play."
PAGE = ("<div><p>A <b>big <i>brown</i></b> dog &amp; a cat. The <a href=\"/x?a=1&amp;b=2\" title=\"Keep\">small "
        "boy</a> runs.</p><script>var s = '<b>not text</b>';</script><ul><li>A red ball.</li></ul></div>")


@pytest.fixture(scope="module")
def served(tmp_path_factory, tiny_tokenizer):
    with serving([untrained_model_dir(tmp_path_factory.mktemp("libre"), tiny_tokenizer)], LIMITS) as running:
        yield running


@pytest.fixture
def access(served, tmp_path):
    """Swap in other access settings for one test (both route sets share the object), then put the old back."""
    app_state = served.app.state
    old = app_state.rest.access

    def use(**settings):
        fresh = Access(AccessSettings(db_path=str(tmp_path / "db.sqlite"), **settings),
                       window=MovingWindow())
        app_state.rest.access = app_state.libre.access = fresh
        return fresh

    yield use
    app_state.rest.access = app_state.libre.access = old


def url(served, path: str) -> str:
    return served.url.rstrip("/") + path


def translate(served, q, **fields) -> dict:
    response = requests.post(url(served, "/translate"), json={"q": q, "source": "en", "target": "de", **fields},
                             timeout=120)
    assert response.status_code == 200, response.text
    return response.json()


# --------------------------------------------------------------------------- the web UI's calls
def test_web_ui_sequence_settings_and_languages_then_a_multipart_translation(served):
    with ThreadPoolExecutor(2) as pool:  # the page sends both at once
        settings, languages = pool.map(lambda p: requests.get(url(served, p), timeout=60),
                                       ["/frontend/settings", "/languages"])
    assert settings.status_code == languages.status_code == 200
    settings, languages = settings.json(), languages.json()
    assert set(settings) == {"charLimit", "frontendTimeout", "apiKeys", "keyRequired", "suggestions",
                             "filesTranslation", "supportedFilesFormat", "language"}
    assert settings["charLimit"] == LIMITS.max_chars and settings["suggestions"] is False
    assert settings["supportedFilesFormat"] == list(extensions())  # every registered format's, in its order
    assert settings["supportedFilesFormat"][:3] == [".txt", ".html", ".htm"]
    assert settings["language"] == {"source": {"code": "auto", "name": "Auto Detect"},
                                    "target": {"code": "de", "name": "German"}}
    assert languages == [{"code": "en", "name": "English", "targets": ["de"]}]
    fields = {"q": TEXT, "source": "auto", "target": "de", "format": "text", "alternatives": "3", "api_key": ""}
    response = requests.post(url(served, "/translate"), files={k: (None, v) for k, v in fields.items()}, timeout=120)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["detectedLanguage"]["language"] == "en" and 0 < answer["detectedLanguage"]["confidence"] <= 100
    assert answer["translatedText"] == translate(served, TEXT)["translatedText"]
    assert isinstance(answer["alternatives"], list) and len(answer["alternatives"]) == 3


def test_html_keeps_its_markup_and_translates_the_sentences_as_text_would(served):
    answer = translate(served, PAGE, format="html", alternatives=2)
    assert answer["alternatives"] == []  # as LibreTranslate: none for html
    out, original = BeautifulSoup(answer["translatedText"], "lxml"), BeautifulSoup(PAGE, "lxml")
    assert [(t.name, t.attrs) for t in out.find_all(True)] == [(t.name, t.attrs) for t in original.find_all(True)]
    assert out.script.string == "var s = '<b>not text</b>';" and 'href="/x?a=1&amp;b=2"' in answer["translatedText"]
    sentences = ["A big brown dog & a cat.", "The small boy runs.", "A red ball."]
    plain = translate(served, sentences)["translatedText"]
    assert " ".join(out.p.get_text().split()) == " ".join(" ".join(plain[:2]).split())
    assert out.li.get_text() == plain[2]
    assert out.b.i is not None and out.a.parent.name == "p"


# --------------------------------------------------------------------------- files
def make_html() -> bytes:
    return ("<!DOCTYPE html><html><head><title>A title.</title></head><body>" + PAGE + "</body></html>").encode()


def html_shape(data: bytes):
    soup = BeautifulSoup(data, "lxml")
    return [(t.name, t.attrs) for t in soup.find_all(True)], soup.script.string


def srt_shape(data: bytes):
    text = data.decode()
    return [line for line in text.split("\r\n") if "-->" in line or line.isdigit()], len(list(srt.parse(text)))


def txt_shape(data: bytes):
    return [len(line.strip()) > 0 for line in data.decode().split("\n")]


FILES = {  # name: (bytes, structure of a file's bytes)
    "notes.txt": (lambda: b"A dog runs.\n\nTwo children play. A man sits.\n", txt_shape),
    "page.html": (make_html, html_shape),
    "film.srt": (lambda: SUBTITLES.encode(), srt_shape),
    "report.docx": (formatted_docx, docx_shape),
    "slides.pptx": (formatted_pptx, pptx_shape),
    "letter.odt": (formatted_odt, odf_shape),
    "book.epub": (formatted_epub, epub_shape),
}


def translate_file(served, name: str, data: bytes, **fields):
    form = {"source": "en", "target": "de", **fields}
    return requests.post(url(served, "/translate_file"), files={"file": (name, data)}, data=form, timeout=120)


@pytest.mark.parametrize("name", list(FILES))
def test_translate_file_and_download_keep_each_formats_structure(served, name):
    make, shape = FILES[name]
    original = make()
    response = translate_file(served, name, original, source="auto")
    assert response.status_code == 200, response.text
    answer = response.json()
    link = answer["translatedFileUrl"]
    assert re.fullmatch(re.escape(url(served, "/download_file/")) + r"[\w-]{32}\.\w+", link)
    assert answer["detectedLanguage"] == {"language": "en"} and answer["model"] == "en-de"
    download = requests.get(link, timeout=60)
    assert download.status_code == 200
    stem, suffix = name.rsplit(".", 1)
    assert f'filename="{stem}.de.{suffix}"' in download.headers["content-disposition"]
    assert shape(download.content) == shape(original)
    assert download.content != original  # translated (the model's words, whatever they are)


def test_translated_docx_text_is_the_translation_of_its_sentences(served):
    link = translate_file(served, "report.docx", formatted_docx()).json()["translatedFileUrl"]
    document = docx.Document(io.BytesIO(requests.get(link, timeout=60).content))
    cells = ["Cell 0 0.", "Cell 0 1.", "Cell 1 0."]
    assert [c.text for c in document.tables[0].rows[0].cells] + [document.tables[0].cell(1, 0).text] == \
        translate(served, cells)["translatedText"]
    link = translate_file(served, "s.pptx", formatted_pptx()).json()["translatedFileUrl"]
    slides = pptx.Presentation(io.BytesIO(requests.get(link, timeout=60).content)).slides
    assert slides[0].shapes.title.text == translate(served, "Slide 0 title.")["translatedText"]


def test_documents_beyond_the_queue_are_told_to_slow_down(served, monkeypatch):
    monkeypatch.setattr(served.app.state.libre, "files_in", 8)  # FILE_QUEUE documents already in
    response = translate_file(served, "a.txt", b"A dog.")
    assert response.status_code == 429
    assert response.json() == {"error": "Slowdown: 8 documents are being translated; retry in a moment"}


def test_files_refused_with_libretranslates_messages(served):
    cases = [
        (requests.post(url(served, "/translate_file"), files={"source": (None, "en"), "target": (None, "de")},
                       timeout=60), 400, "Invalid request: missing file parameter"),
        (translate_file(served, "virus.exe", b"MZ"), 400, "Invalid request: file format not supported"),
        (translate_file(served, "broken.docx", b"PK\x03\x04 not a zip"), 400, "not a ZIP archive"),
        (translate_file(served, "a.txt", b"A dog.", target="xx"), 400, "xx is not supported"),
        (translate_file(served, "a.txt", b"A dog." * 200_000), 413, "Request body too large"),
        (requests.get(url(served, "/download_file/..%2F..%2Fetc%2Fpasswd"), timeout=60), 404, "No such translated"),
        (requests.get(url(served, "/download_file/nothing.txt"), timeout=60), 404, "No such translated"),
    ]
    for response, status, message in cases:
        assert response.status_code == status, (response.url, response.text)
        assert message in response.json()["error"], (response.url, response.text)


# --------------------------------------------------------------------------- suggestions, keys, limits
def test_suggest_is_refused_until_turned_on_then_stored_and_exported(served, access, tmp_path):
    form = {"q": "A dog runs.", "s": "Ein Hund rennt.", "source": "en", "target": "de"}
    off = requests.post(url(served, "/suggest"), data=form, timeout=60)
    assert off.status_code == 403 and off.json() == {"error": "Suggestions are disabled on this server."}
    access(suggestions=True)
    assert requests.get(url(served, "/frontend/settings"), timeout=60).json()["suggestions"] is True
    on = requests.post(url(served, "/suggest"), data=form, timeout=60)
    assert on.status_code == 200 and on.json() == {"success": True}
    missing = requests.post(url(served, "/suggest"), json={**form, "s": ""}, timeout=60)
    assert missing.status_code == 400 and missing.json()["error"] == "Invalid request: missing s parameter"
    rows = sqlite3.connect(tmp_path / "db.sqlite").execute("SELECT q, s, source, target, model FROM suggestions")
    assert rows.fetchall() == [("A dog runs.", "Ein Hund rennt.", "en", "de", "en-de")]
    Store(tmp_path / "db.sqlite").export(tmp_path / "out")
    assert load_split(tmp_path / "out" / "en-de", "train", "en", "de") == [("A dog runs.", "Ein Hund rennt.")]


def test_api_keys_request_and_character_limits(served, access, tmp_path):
    checks = access(api_keys=True, req_limit=2, char_limit=30)
    checks.store.add_key(3, key="good-key", char_limit=12)
    bad = requests.post(url(served, "/translate"), json={"q": "A dog.", "source": "en", "target": "de",
                                                         "api_key": "wrong"}, timeout=60)
    assert bad.status_code == 403 and bad.json() == {"error": "Invalid API key"}
    too_long = requests.post(url(served, "/translate"), json={"q": "A dog runs in the big green park.",
                                                              "source": "en", "target": "de"}, timeout=60)
    assert too_long.status_code == 400
    assert too_long.json()["error"] == "Invalid request: request (33) exceeds text limit (30)"
    assert translate(served, "A dog.")["translatedText"]  # the second of 2 a minute without a key
    slow = requests.post(url(served, "/detect"), json={"q": "A dog."}, timeout=60)
    assert slow.status_code == 429 and slow.json() == {"error": "Slowdown: 2 per 1 minute"}
    assert translate(served, "A dog.", api_key="good-key")["translatedText"]  # the key's own 3 a minute
    keyed = requests.post(url(served, "/translate"), json={"q": "A dog runs far.", "source": "en", "target": "de",
                                                           "api_key": "good-key"}, timeout=60)
    assert keyed.json() == {"error": "Invalid request: request (15) exceeds text limit (12)"}
    assert requests.get(url(served, "/languages"), timeout=60).status_code == 200  # never limited
    settings = requests.get(url(served, "/frontend/settings"), timeout=60).json()
    assert (settings["apiKeys"], settings["keyRequired"], settings["charLimit"]) == (True, False, 30)


# --------------------------------------------------------------------------- clients, docs
def test_libretranslatepy_and_deep_translator_unchanged(served, tmp_path):
    from deep_translator import LibreTranslator
    from libretranslatepy import LibreTranslateAPI

    expected = translate(served, TEXT)["translatedText"]
    client = LibreTranslateAPI(served.url)
    assert client.translate(TEXT, "en", "de") == expected
    assert client.detect(TEXT)[0]["language"] == "en"
    assert [lang["code"] for lang in client.languages()] == ["en"]
    path = tmp_path / "story.txt"
    path.write_text(TEXT + "\n", encoding="utf-8")
    translator = LibreTranslator(source="en", target="de", custom_url=served.url, api_key="unused")
    assert translator.translate_file(str(path)) == expected
    assert translator.translate(TEXT) == expected


def test_health_spec_and_docs(served):
    assert requests.get(url(served, "/health"), timeout=60).json() == {"status": "ok"}
    spec = requests.get(url(served, "/spec"), timeout=60).json()
    assert spec == requests.get(url(served, "/openapi.json"), timeout=60).json()
    assert sorted(spec["paths"]) == ["/detect", "/download_file/{name}", "/frontend/settings", "/health",
                                     "/languages", "/suggest", "/translate", "/translate_file"]
    docs = requests.get(url(served, "/docs"), timeout=60)
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    assert "<code>POST /translate_file</code>" in docs.text and "<script" not in docs.text
    assert json.dumps(spec["paths"]["/translate"]["post"]["requestBody"]).count("html") >= 1
