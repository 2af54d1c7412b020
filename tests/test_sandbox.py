"""space/hosting/sandbox.py: a document read and written in a worker process, killed when its time or memory
budget ends or its client leaves; the worker is gone afterwards, whatever happened."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.documents import make_docx, replace_member, valid_documents
from space.hosting.sandbox import DocumentWorker
from transformer_hub.formats import DocumentError, read_document
from transformer_hub.formats.layout import Translated

pytestmark = pytest.mark.slow  # the first worker starts the forkserver (it imports the format libraries: ~10 s)
W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def big_docx(paragraphs: int = 20_000) -> bytes:
    """A valid .docx under the element limit whose tree takes python-docx a while and some memory to build."""
    body = "<w:p><w:r><w:t>A dog runs.</w:t></w:r></w:p>" * paragraphs
    return replace_member(make_docx(), "word/document.xml",
                          f'<?xml version="1.0"?><w:document {W}><w:body>{body}</w:body></w:document>'.encode())


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_document_is_read_and_written_by_a_worker_that_then_exits():
    data = valid_documents()[".odt"]
    with DocumentWorker(data, ".odt", 100_000, seconds=60, memory_mb=512) as worker:
        texts = worker.texts()
        out = worker.write([Translated.unchanged(t.upper()) for t in texts])
        pid = worker.process.pid
    assert texts == ["A dog runs. It is fast."] and read_document(out, ".odt").texts == ["A DOG RUNS. IT IS FAST."]
    assert gone(pid)


def test_a_worker_past_its_memory_budget_is_refused_in_words_and_gone():
    with pytest.raises(DocumentError, match="memory budget of 1 MB") as refused:
        with DocumentWorker(big_docx(), ".docx", 10 << 20, seconds=60, memory_mb=1) as worker:
            pid = worker.process.pid
            worker.texts()
    assert "too complex to translate here" in str(refused.value)
    assert not worker.process.is_alive() and gone(pid)


def test_a_worker_past_its_time_budget_is_killed_and_gone():
    worker = DocumentWorker(big_docx(), ".docx", 10 << 20, seconds=0.001, memory_mb=512)
    pid = worker.process.pid
    with pytest.raises(DocumentError, match=r"took more than 0.001 seconds to read, the limit"):
        worker.texts()
    assert not worker.process.is_alive() and gone(pid)
    assert worker.process.exitcode is not None and worker.process.exitcode < 0  # killed, not finished


def test_a_worker_whose_client_left_is_killed_at_once():
    worker = DocumentWorker(big_docx(), ".docx", 10 << 20, seconds=60, memory_mb=512, cancelled=lambda: True)
    pid = worker.process.pid
    with pytest.raises(DocumentError, match="The client left before the document was translated"):
        worker.texts()
    assert gone(pid)


def test_a_refused_document_comes_back_as_its_formats_words():
    with pytest.raises(DocumentError, match="not valid SRT: a timestamp is out of range"):
        with DocumentWorker(b"1\n99999999999999:00:01,000 --> 99999999999999:00:02,000\nHi.\n", ".srt", 100_000,
                            seconds=60, memory_mb=512) as worker:
            worker.texts()


def test_a_worker_does_not_run_the_servers_main_module_again(tmp_path):
    """``python app.py`` as the server: each document's worker is a fork, its start does not import the main file
    anew (Python 3.11's forkserver would, for every worker: Gradio and the Space, seconds each)."""
    runs, main = tmp_path / "runs.txt", tmp_path / "server_main.py"
    main.write_text(f"""with open({str(runs)!r}, "a") as log:
    log.write(__name__ + "\\n")  # once per run of this file
from space.hosting.sandbox import DocumentWorker

if __name__ == "__main__":
    for _ in range(3):
        with DocumentWorker(b"A dog runs.", ".txt", 1000, seconds=120, memory_mb=512) as worker:
            print(worker.texts())
""", encoding="utf-8")
    done = subprocess.run([sys.executable, str(main)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['A dog runs.']"] * 3
    assert runs.read_text().splitlines() == ["__main__"]  # the server's run only: none in the forkserver or workers


def test_a_worker_that_cannot_even_say_it_ran_out_of_memory_exits_with_the_code_that_says_so():
    """Past its address-space cap a worker may fail to pickle its own "memory" answer: it then exits with
    MEMORY_EXIT, which the parent reads as the document's memory budget (not as the server's fault)."""
    import multiprocessing

    from space.hosting import sandbox

    class Full:
        def send(self, message):
            raise MemoryError

    process = multiprocessing.get_context("fork").Process(target=sandbox._say_memory, args=(Full(),))
    process.start()
    process.join(30)
    assert process.exitcode == sandbox.MEMORY_EXIT


def test_a_document_with_more_text_than_its_limit_is_refused_in_the_worker():
    """A 35 kB .epub holding 12 MB of text: refused by its worker, before the server splits or scores any of it
    (it was split and scored in the server: 21 s and +860 MB there)."""
    from benchmarks.hostile import text_cases

    suffix, data = text_cases()["epub-12mb-text"]
    assert len(data) < 100_000
    with pytest.raises(DocumentError, match=r"^The document holds 12,000,001 characters of text, more than one "
                                            r"document may \(1,000,000\): split it into smaller documents\.$"):
        with DocumentWorker(data, suffix, 100_000, seconds=60, memory_mb=512, max_chars=1_000_000) as worker:
            worker.texts()
    with DocumentWorker(b"A dog runs.", ".txt", 1000, seconds=60, memory_mb=512, max_chars=11) as worker:
        assert worker.texts() == ["A dog runs."]


def test_a_documents_sentences_are_cut_counted_and_its_domain_told_in_the_worker():
    """What costs as much as a document's text is done in its worker, as the library does it in-process: each
    text's sentences (a .docx of 40,000 sentences was cut in the server before the 1,000 were checked) and their
    domains; past the sentence limit the worker refuses it in the formats' words."""
    from transformer_hub.formats import cut_document
    from transformer_hub.text.domain import DomainClassifier

    classifier = DomainClassifier.train({"captions": ["A dog runs in the park.", "Two men sit on a bench."],
                                         "software": ["Click the button to save the file.", "Open the menu."]})
    data = valid_documents()[".odt"]
    with DocumentWorker(data, ".odt", 100_000, seconds=60, memory_mb=512) as worker:
        texts = worker.texts()
        cut = worker.cut("en", 2, classifier, ("captions", "software"))
    assert cut == cut_document(texts, "en", 2, classifier, ("captions", "software"))
    assert [layout.segments for layout in cut.layouts] == [("A dog runs.", "It is fast.")]
    assert cut.domains[0].domain == "captions" and 0.5 < cut.domains[0].confidence <= 1.0
    with pytest.raises(DocumentError, match=r"^The document has 2 sentences to translate, the limit is 1: split it "
                                            r"into smaller documents\.$"):
        with DocumentWorker(data, ".odt", 100_000, seconds=60, memory_mb=512) as worker:
            worker.texts()
            pid = worker.process.pid
            worker.cut("en", 1)
    assert gone(pid)


def test_a_worker_whose_client_left_before_its_sentences_were_cut_is_killed():
    left = []
    worker = DocumentWorker(valid_documents()[".odt"], ".odt", 100_000, seconds=60, memory_mb=512,
                            cancelled=lambda: bool(left))
    assert worker.texts() == ["A dog runs. It is fast."]
    left.append(True)
    with pytest.raises(DocumentError, match="The client left before the document was translated"):
        worker.cut("en", 1000)
    assert gone(worker.process.pid)
