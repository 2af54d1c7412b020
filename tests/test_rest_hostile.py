"""Hostile documents over HTTP: every hostile document and malformed file a 4xx in the ``{"error": ...}`` shape naming what
is wrong, a fuzzer's documents never a 5xx, the document worker's budget, /suggest bounded, and the smaller points;
and a document's unsure sentences in /translate_file's answer; the page (its Translate tab's documents)
the same in words. One server over the shipped en-de model."""
from __future__ import annotations

import multiprocessing
import random
import sqlite3
from pathlib import Path

import pytest
import requests

from benchmarks.documents import make_docx, valid_documents
from benchmarks.hostile import hostile_cases
from helpers.space_fixtures import serving
from space.hosting.access import Access, AccessSettings, MovingWindow
from space.hosting.limits import Limits, RequestError
from space.page import documents
from space.pictures.word_view import DOMAIN_NOTE
from test_formats_hostile import EXPECTED, SCALE, mutate
from transformer_hub.formats.budget import MAX_DEPTH

pytestmark = pytest.mark.slow  # one server for the module
SHIPPED = Path(__file__).resolve().parents[1] / "space" / "models" / "en-de"
LIMITS = Limits(max_output_tokens=40, max_file_sentences=40)
FUZZ_PER_FORMAT = 4  # mutated documents of each of the eight formats sent over HTTP


@pytest.fixture(scope="module")
def served():
    if not (SHIPPED / "model.safetensors").is_file():
        pytest.skip("the shipped en-de model is not in this checkout")
    with serving([SHIPPED], LIMITS) as running:
        yield running


@pytest.fixture
def access(served, tmp_path):
    """Other access settings for one test (both route sets share the object), the old ones put back after."""
    state = served.app.state
    old = state.rest.access

    def use(**settings):
        state.rest.access = state.libre.access = Access(
            AccessSettings(db_path=str(tmp_path / "db.sqlite"), **settings), window=MovingWindow())
        return state.libre.access

    yield use
    state.rest.access = state.libre.access = old


def url(served, path: str) -> str:
    return served.url.rstrip("/") + path


def send_file(served, name: str, data: bytes, **fields) -> requests.Response:
    return requests.post(url(served, "/translate_file"), files={"file": (name, data)},
                         data={"source": "en", "target": "de", **fields}, timeout=120)


def assert_error(response: requests.Response, status: int, words: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert list(body) == ["error"] and words in body["error"], body


# ----------------------------------------------------------------------------- hostile documents
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_hostile_document_is_a_400_naming_the_limit_or_the_damage(served, name):
    suffix, data = hostile_cases(SCALE)[name]
    assert_error(send_file(served, "hostile" + suffix, data), 400, EXPECTED[name])


def test_an_html_text_of_5000_bold_tags_is_a_400_not_a_recursion_error(served):
    response = requests.post(url(served, "/translate"), json={"q": "<b>" * 5000 + "A dog runs.", "source": "en",
                                                              "target": "de", "format": "html"}, timeout=60)
    assert_error(response, 400, f"nests elements more than {MAX_DEPTH} deep")


def test_fuzzed_documents_of_every_format_are_never_a_server_error(served):
    rng = random.Random(4646)
    documents = [(suffix, mutate(data, rng)) for suffix, data in valid_documents().items()
                 for _ in range(FUZZ_PER_FORMAT)]
    assert len(documents) == 44  # 4 of each of the eleven formats
    statuses = []
    for suffix, data in documents:
        response = send_file(served, "fuzzed" + suffix, data)
        statuses.append(response.status_code)
        assert response.status_code < 500, (suffix, response.text)
        if response.status_code != 200:
            assert list(response.json()) == ["error"]
    assert 400 in statuses


def test_a_document_past_its_memory_budget_is_a_400_and_its_worker_is_gone(served, monkeypatch):
    ctx = served.demo.space_context
    monkeypatch.setattr(ctx, "limits", Limits(**{**vars(LIMITS), "document_memory_mb": 1}))
    response = send_file(served, "big.docx", make_docx("A dog runs. " * 2000))
    assert_error(response, 400, "memory budget of 1 MB")
    assert "too complex to translate here" in response.json()["error"]
    assert [p for p in multiprocessing.active_children() if p.name == "document-worker"] == []


def test_a_5_megabyte_subtitle_body_gets_its_413_not_a_reset(served):
    body = ("1\n00:00:01,000 --> 00:00:02,000\nA dog runs.\n\n" * 120_000).encode()[:5_500_000]
    assert_error(send_file(served, "huge.srt", body), 413, "Request body too large")


# ----------------------------------------------------------------------------- a document's unsure sentences
def test_a_document_with_an_out_of_domain_sentence_is_flagged_in_the_answer(served):
    sure, odd = "A dog runs in the park.", "Click here to download the holiday photos."
    response = send_file(served, "mixed.docx", make_docx(f"{sure} {odd}"), model="en-de")
    assert response.status_code == 200, response.text
    answer = response.json()
    assert {"translatedFileUrl", "model", "engine", "detectedLanguage"} <= set(answer)  # LibreTranslate's kept
    assert answer["unsure"]["count"] == 1 and answer["unsure"]["sentences"] == 2
    assert [s["source"] for s in answer["unsure"]["first"]] == [odd]
    calm = send_file(served, "calm.docx", make_docx(sure), model="en-de").json()
    assert "unsure" not in calm  # a document the model is sure of gets no warning


# ----------------------------------------------------------------------------- the page: the same in words
@pytest.fixture
def page_upload(tmp_path, monkeypatch):
    """An uploader into a fresh Gradio upload folder, as the Translate tab's file box hands files over."""
    folder = tmp_path / "gradio-tmp"
    folder.mkdir()
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(folder))

    def put(name: str, data: bytes) -> dict:
        (folder / name).write_bytes(data)
        return {"path": str(folder / name), "orig_name": name}
    return put


def page_translate(served, value: dict):
    return documents.translate_document(served.demo.space_context, value, "en-de", source_lang="en",
                                        target_lang="de", engine="auto", progress=lambda *a, **k: None)


@pytest.mark.parametrize("name", ["odt-empty-paragraphs", "odt-nested-sections", "docx-bad-crc",
                                  "srt-huge-timestamp", "html-nested-bold"])
def test_the_page_names_the_limit_or_the_damage_of_a_hostile_document(served, page_upload, name):
    suffix, data = hostile_cases(SCALE)[name]
    with pytest.raises(RequestError) as refused:
        page_translate(served, page_upload("hostile" + suffix, data))
    assert EXPECTED[name] in refused.value.message


def test_the_page_names_the_memory_budget_a_document_passed(served, page_upload, monkeypatch):
    ctx = served.demo.space_context
    monkeypatch.setattr(ctx, "limits", Limits(**{**vars(LIMITS), "document_memory_mb": 1}))
    with pytest.raises(RequestError, match="memory budget of 1 MB") as refused:
        page_translate(served, page_upload("big.docx", make_docx("A dog runs. " * 2000)))
    assert "too complex to translate here" in refused.value.message


def test_the_page_notes_a_documents_out_of_domain_sentence(served, page_upload):
    sure, odd = "A dog runs in the park.", "Click here to download the holiday photos."
    path, note = page_translate(served, page_upload("mixed.docx", make_docx(f"{sure} {odd}")))
    assert path.endswith("mixed.de.docx") and "2 sentence(s) translated" in note
    assert f"⚠ The model is unsure of 1 of 2 sentence(s): “{odd}” → “" in note
    assert sure not in note and DOMAIN_NOTE in note
    _, calm = page_translate(served, page_upload("calm.docx", make_docx(sure)))
    assert "⚠" not in calm and "1 sentence(s) translated" in calm


# ----------------------------------------------------------------------------- /suggest
def suggest(served, **fields) -> requests.Response:
    return requests.post(url(served, "/suggest"), json={"q": "A dog.", "s": "Ein Hund.", "source": "en",
                                                        "target": "de", **fields}, timeout=60)


def test_suggest_checks_every_field(served, access, tmp_path):
    access(suggestions=True)
    assert_error(suggest(served, model="x" * 250_000), 400, "is not one of this server's models (en-de)")
    assert_error(suggest(served, model="../../etc"), 400, "is not one of this server's models")
    assert_error(suggest(served, q="\U0001F600" * 1001), 400, "q is 4,004 bytes (UTF-8), the limit is 4,000")
    assert_error(suggest(served, s="x" * 4001), 400, "s is 4,001 bytes (UTF-8), the limit is 4,000")
    assert_error(suggest(served, source="xx"), 400, "xx is not supported")
    assert suggest(served, model="en-de").json() == {"success": True}
    rows = sqlite3.connect(tmp_path / "db.sqlite").execute("SELECT model FROM suggestions").fetchall()
    assert rows == [("en-de",)]


def test_suggestions_stop_with_507_once_the_store_is_full(served, access, tmp_path):
    store = access(suggestions=True, suggestions_max_mb=0.1).store  # 104,857 bytes
    big = {"q": "A dog runs. " * 300, "s": "Ein Hund rennt. " * 240}  # 7,440 bytes a suggestion
    answers = [suggest(served, **{**big, "q": f"{n} " + big["q"]}).status_code for n in range(60)]
    assert answers[0] == 200 and 507 in answers and answers[answers.index(507):] == [507] * (60 - answers.index(507))
    assert store.size_bytes() <= 0.1 * (1 << 20) + 16_384  # the cap, and at most the last write's pages past it
    # one more that would pass the cap is refused in words (a smaller one that still fits is taken)
    assert_error(suggest(served, **big), 507, "The suggestion store is full (its limit is 0.1 MB)")


def test_suggestions_count_against_the_clients_rate_limit(served, access):
    access(suggestions=True, req_limit=2)
    assert [suggest(served).status_code for _ in range(2)] == [200, 200]
    assert_error(suggest(served), 429, "Slowdown: 2 per 1 minute")


def test_a_flood_of_suggestions_from_eight_clients_is_held_to_the_clients_limit(served, access, tmp_path):
    """Eight clients at once from one address (loopback, no trusted proxy): 5 stored in all, every other a 429."""
    from concurrent.futures import ThreadPoolExecutor

    access(suggestions=True, req_limit=5)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: suggest(served, q=f"A dog {n}."), range(40)))
    assert sorted(a.status_code for a in answers) == [200] * 5 + [429] * 35
    assert all(a.json() == {"error": "Slowdown: 5 per 1 minute"} for a in answers if a.status_code == 429)
    assert sqlite3.connect(tmp_path / "db.sqlite").execute("SELECT COUNT(*) FROM suggestions").fetchone() == (5,)


# ----------------------------------------------------------------------------- the smaller points
def test_wrong_methods_and_a_download_without_a_name_answer_in_the_error_shape(served):
    assert_error(requests.get(url(served, "/suggest"), timeout=30), 405, "/suggest takes POST")
    assert_error(requests.get(url(served, "/translate"), timeout=30), 405, "/translate takes POST")
    assert_error(requests.get(url(served, "/download_file"), timeout=30), 404, "No file named")
    assert_error(requests.get(url(served, "/download_file/"), timeout=30), 404, "No such translated file")


def test_mcp_detect_refuses_a_lone_surrogate_in_words(served):
    import gradio as gr

    from space.page.tools import add_tools

    with gr.Blocks():
        _, detect, _ = add_tools(served.demo.space_context)
    with pytest.raises(gr.Error, match="q is not valid Unicode text"):
        detect("A dog\ud800 runs.")
