"""The translate tab's documents: an upload checked (size, format, sentences), translated with progress, its
layout kept, and written only inside the Space's temporary folder."""
from __future__ import annotations

import os

import pytest

from space.page import documents
from space.serving.context import SpaceContext
from space.hosting.limits import Limits, RequestError
from space.serving.model_store import ModelStore

DOCUMENT = "A dog runs in the park. Two children play.\n\nA man sits on a bench.\n"


@pytest.fixture
def upload_folder(tmp_path, monkeypatch):
    folder = tmp_path / "gradio-tmp"
    folder.mkdir()
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(folder))
    return folder


@pytest.fixture
def ctx(tmp_path, make_model):
    models = tmp_path / "models"
    make_model().save_pretrained(models / "en-de")
    context = SpaceContext(store=ModelStore(models, []), limits=Limits(max_file_bytes=200, max_file_sentences=4,
                                                                        document_chunk=1))
    yield context
    context.decoder.close()


def upload(folder, name: str, content: bytes):
    path = folder / name
    path.write_bytes(content)
    return {"path": str(path), "orig_name": name}


def test_bad_files_are_refused_with_a_clear_message(upload_folder, tmp_path):
    cases = [
        (upload(upload_folder, "big.txt", b"A dog runs. " * 30), 200, "The file is too large: 360 bytes, the limit is 200"),
        (upload(upload_folder, "doc.pdf", b"%PDF"), 200, ".pdf files cannot be translated; upload one of .txt, .html"),
        (None, 200, "Upload a document to translate first"),
    ]
    outside = tmp_path / "outside.txt"  # a path a client could send: not an upload
    outside.write_text("A dog.", encoding="utf-8")
    cases.append(({"path": str(outside)}, 200, "The file must be uploaded to this Space"))
    for value, limit, message in cases:
        with pytest.raises(RequestError, match=message.replace("(", r"\(").replace(")", r"\)")):
            documents.read_upload(value, limit)
    assert not (upload_folder / "big.txt").exists() and not (upload_folder / "doc.pdf").exists()  # deleted


def test_unreadable_documents_are_refused_before_decoding(ctx, upload_folder):
    cases = [("five.txt", b"One. Two. Three.\n\nFour. Five.\n", "The document has 5 sentences to translate, the "
                                                                   "limit is 4"),
             ("latin1.txt", "Un chien très rapide.".encode("latin-1"), "not UTF-8 text (byte 0xe8 at position 11)"),
             ("broken.docx", b"PK not a zip", "not a valid Word (.docx) document"),
             ("empty.txt", b"", "The file is empty")]
    for name, data, message in cases:
        with pytest.raises(RequestError, match=message.replace("(", r"\(").replace(")", r"\)")):
            documents.translate_document(ctx, upload(upload_folder, name, data), None, "greedy", source_lang="en",
                                         target_lang="de", engine="auto")  # the tab's engine choices, "auto" too
    assert ctx.decoder._pool is None  # nothing was decoded: the worker never started


def test_utf8_with_bom_and_crlf_is_read(upload_folder):
    _, data = documents.read_upload(upload(upload_folder, "bom.txt", "\ufeffA dog.\r\n\r\nEin Hund.\r\n".encode()),
                                    200)
    assert data == "\ufeffA dog.\r\n\r\nEin Hund.\r\n".encode()


@pytest.mark.slow  # starts the Space's decoding worker process
def test_a_document_is_translated_with_progress_and_its_layout(ctx, upload_folder, tmp_path):
    steps = []
    before = set(os.listdir(tmp_path))
    value = upload(upload_folder, "story.txt", DOCUMENT.encode())
    path, note = documents.translate_document(ctx, value, None, "greedy", max_length=6, source_lang="auto",
                                              target_lang="de", progress=lambda *a, **k: steps.append(a[0]))
    assert steps == [(0, 3), (1, 3), (2, 3)]  # one step per sentence (document_chunk=1)
    assert os.path.dirname(os.path.dirname(path)) == str(upload_folder.resolve())  # written in the temporary folder
    assert set(os.listdir(tmp_path)) == before  # and nowhere else
    out = open(path, encoding="utf-8").read()
    assert os.path.basename(path) == "story.de.txt" and "3 sentence(s) translated" in note
    assert "Detected: English" in note
    paragraphs = out.split("\n\n")
    assert len(paragraphs) == 2 and out.endswith("\n") and "\n" not in paragraphs[0]
    # the content: the library's own translation of each sentence, in the document's layout
    from transformer_hub import Transformer
    from transformer_hub.text import split_sentences

    model = Transformer.from_pretrained(tmp_path / "models" / "en-de")
    layout = split_sentences(DOCUMENT, "en")
    alone = model.translate(list(layout.segments), strategy="greedy", max_length=6, src_lang="en", tgt_lang="de")
    assert out == layout.join(alone)
