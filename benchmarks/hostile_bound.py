"""What a visitor's upload or largest request costs the server process itself, and whether it holds others up:

    python -m benchmarks.hostile_bound [--root CHECKOUT] [--out results.json] [--only NAME ...]

On ``python app.py`` of a checkout (``--root``, default this one: run it on two checkouts for a before/after),
one probe at a time, each from 127.0.0.1 while ``GET /languages`` is polled every 100 ms from 127.0.0.2:

* documents of costly text to ``/translate_file`` (``hostile.text_cases``' .docx word of 60,000 dashes and .epub
  of 12 MB of text; .docx files within the text cap and past the sentence cap: 40,000 short sentences, and 1,001
  paragraphs of long words, the costliest text to tell a domain from):
  the wall time, the CPU seconds and peak RSS above idle of the server process alone and of its whole tree (the
  document workers and the decoding worker), the worst ``/languages`` latency;
* the .docx of 40,000 sentences again, its client gone after 0.5 s (while its sentences are cut), and one of
  1,000 paragraphs of long words (within the limits), its client gone after 3 s (while they are decoded): the
  tree's CPU seconds in the 8 s after (work that went on for nobody), and the last half-second in which it still
  used a tenth of a core;
* the largest legal ``/translate`` (16 lines of 3 long sentences, quality best), and 2 s into it a one-sentence
  ``/translate`` from another address: how long that one took, and the big one.

Targets: per upload <= 2 s CPU and <= 200 MB RSS growth in the server process, ``/languages`` within 0.5 s, no
work after the client left; the one-sentence request served within a few seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

import requests

from .app import stat_cpu_s
from .documents import make_docx, replace_member
from .hostile import W, text_cases
from .hostile_bench import tree_cpu_s, tree_memory_mb
from .hostile_probes import OTHER, Watch, server

SAMPLE_S = 0.02
SENTENCE = ("The old man with the red hat walks his small brown dog along the quiet river every morning, while the "
            "children play football in the park and their parents talk about the weather, the market and the news "
            "of the day before they all go home for a long lunch.")  # 262 characters: three fit a line of 1,000


def many_sentences_docx(paragraphs: int = 1000, per_paragraph: int = 40) -> bytes:
    """A .docx of ``paragraphs`` x ``per_paragraph`` short sentences (960,000 characters: under the text cap of
    1,000,000, 40 times the sentence cap), a few tens of kB on the wire."""
    body = ("<w:p><w:r><w:t>" + "A dog runs in the park. " * per_paragraph + "</w:t></w:r></w:p>") * paragraphs
    return replace_member(make_docx(), "word/document.xml", (
        f'<?xml version="1.0"?><w:document {W}><w:body>{body}</w:body></w:document>').encode())


def long_words_docx(paragraphs: int = 1001) -> bytes:
    """A .docx of ``paragraphs`` paragraphs of 998 characters of 34-letter words without a full stop: one sentence
    each (one more than the sentence cap), 999,999 characters whose every word the domain classifier scores (its
    words and their letter 4-grams: the costliest text to tell a domain from)."""
    words = ("Supercalifragilisticexpialidocious " * 29)[:998]
    body = ("<w:p><w:r><w:t>" + words + "</w:t></w:r></w:p>") * paragraphs
    return replace_member(make_docx(), "word/document.xml", (
        f'<?xml version="1.0"?><w:document {W}><w:body>{body}</w:body></w:document>').encode())


def own_rss_mb(pid: int) -> float:
    """The server process's own resident memory now (its children not counted)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


class OwnWatch(Watch):
    """``hostile_probes.Watch``, and the server process's own peak RSS sampled beside its tree's."""

    def __init__(self, url: str, pid: int) -> None:
        super().__init__(url, pid)
        self.own_peak_mb = 0.0
        self.threads.append(threading.Thread(target=self._own))

    def _own(self) -> None:
        while not self.done.is_set():
            self.own_peak_mb = max(self.own_peak_mb, own_rss_mb(self.pid))
            time.sleep(SAMPLE_S)


def measure(url: str, pid: int, name: str, send: Callable[[], requests.Response]) -> Dict:
    """One probe: its answer, wall time, CPU and RSS growth of the server process and of its tree (and the tree's
    PSS, which counts a worker's pages shared with its forkserver once), /languages."""
    idle_own, idle_tree, idle_pss = own_rss_mb(pid), tree_memory_mb(pid), tree_memory_mb(pid, "Pss:")
    cpu_own, cpu_tree, start = stat_cpu_s(pid) or 0.0, tree_cpu_s(pid), time.perf_counter()
    with OwnWatch(url, pid) as watch:
        try:
            response = send()
            status, answer = response.status_code, response.text[:200]
        except requests.RequestException as exc:
            status, answer = "no answer", type(exc).__name__
    return {"probe": name, "status": status, "answer": answer, "wall_s": round(time.perf_counter() - start, 2),
            "server_cpu_s": round((stat_cpu_s(pid) or 0.0) - cpu_own, 2),
            "tree_cpu_s": round(tree_cpu_s(pid) - cpu_tree, 2),
            "server_rss_above_idle_mb": round(max(0.0, watch.own_peak_mb - idle_own), 1),
            "tree_rss_above_idle_mb": round(max(0.0, watch.peak_mb - idle_tree), 1),
            "tree_pss_above_idle_mb": round(max(0.0, watch.peak_pss_mb - idle_pss), 1),
            "languages_worst_ms": round(watch.worst_ms, 1),
            "languages_ok": f"{watch.polls - watch.failed}/{watch.polls}"}


def upload(url: str, suffix: str, data: bytes) -> Callable[[], requests.Response]:
    return lambda: requests.post(url + "translate_file", files={"file": ("doc" + suffix, data)},
                                 data={"source": "en", "target": "de"}, timeout=600)


def left_early(url: str, pid: int, name: str, suffix: str, data: bytes, leave_after: float,
               watch_s: float = 8.0) -> Dict:
    """The upload sent whole, the connection closed ``leave_after`` s later; the tree's CPU in the ``watch_s`` after."""
    prepared = requests.Request("POST", url + "translate_file", files={"file": ("doc" + suffix, data)},
                                data={"source": "en", "target": "de"}).prepare()
    host, port = url.split("//")[1].rstrip("/").split(":")
    head = (f"POST /translate_file HTTP/1.1\r\nHost: {host}\r\nContent-Type: {prepared.headers['Content-Type']}\r\n"
            f"Content-Length: {len(prepared.body)}\r\n\r\n").encode()
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head + prepared.body)
        time.sleep(leave_after)
    windows, before = [], tree_cpu_s(pid)
    for _ in range(int(watch_s / 0.5)):
        time.sleep(0.5)
        now = tree_cpu_s(pid)
        windows.append(now - before)
        before = now
    busy = [i for i, cpu in enumerate(windows) if cpu > 0.05]  # a tenth of a core over half a second
    return {"probe": f"{name}, client gone after {leave_after:g} s",
            "tree_cpu_s_after_leaving": round(sum(windows), 2),
            "busy_until_s_after_leaving": 0.5 * (busy[-1] + 1) if busy else 0.0}


def _translate(url: str, q, source_address: Optional[str] = None, quality: str = "fast") -> Dict:
    start = time.perf_counter()
    with requests.Session() as session:
        if source_address is not None:  # another client: the server shares connections per address
            session.get_adapter(url).init_poolmanager(1, 1, source_address=(source_address, 0))
        response = session.post(url + "translate", json={"q": q, "source": "en", "target": "de",
                                                         "quality": quality}, timeout=600)
    return {"status": response.status_code, "wall_s": round(time.perf_counter() - start, 2)}


def largest_translate(url: str, pid: int, delay: float = 2.0) -> Dict:
    """The largest legal /translate (48 sentences, quality best) and a one-sentence one ``delay`` s into it; the
    tree's CPU seconds meanwhile (what decoding in parts costs, whatever the machine's load does to wall times)."""
    alone = _translate(url, "A dog runs.", OTHER)
    big: Dict = {}
    lines = [" ".join([SENTENCE] * 3) for _ in range(16)]
    cpu = tree_cpu_s(pid)
    thread = threading.Thread(target=lambda: big.update(_translate(url, lines, quality="best")))
    thread.start()
    time.sleep(delay)
    small = _translate(url, "A dog runs.", OTHER)
    thread.join()
    return {"probe": "48 sentences (quality best), one sentence 2 s into it", "big": big,
            "tree_cpu_s": round(tree_cpu_s(pid) - cpu, 2), "small_alone": alone, "small_behind_big": small}


def run(root: Path, only: Optional[List[str]] = None) -> Dict:
    cases = {name: text_cases()[name] for name in ("docx-long-word", "epub-12mb-text")}
    cases["docx-40k-sentences"] = (".docx", many_sentences_docx())
    cases["docx-1001-long-paragraphs"] = (".docx", long_words_docx())
    rows = []
    with tempfile.TemporaryDirectory(prefix="bound_") as folder:
        with server(root, Path(folder) / "server.log") as (url, process):
            _translate(url, "A dog runs.")  # the model loaded
            upload(url, ".txt", b"A dog runs.")()  # the document workers' forkserver started (once, ~200 MB)
            for name, (suffix, data) in cases.items():
                if not only or name in only:
                    rows.append({**measure(url, process.pid, name, upload(url, suffix, data)),
                                 "upload_bytes": len(data)})
            if not only or "left-early" in only:  # while its sentences are cut, and while they are decoded
                rows.append(left_early(url, process.pid, "docx of 40,000 sentences", ".docx", many_sentences_docx(),
                                       0.5))
                rows.append(left_early(url, process.pid, "docx of 1,000 paragraphs of long words", ".docx",
                                       long_words_docx(1000), 3.0))
            if not only or "largest-translate" in only:
                rows.append(largest_translate(url, process.pid))
    return {"root": str(root), "probes": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--only", nargs="*", default=None,
                        help="docx-long-word, epub-12mb-text, docx-40k-sentences, docx-1001-long-paragraphs, "
                             "left-early, largest-translate")
    parser.add_argument("--env", nargs="*", default=[], metavar="NAME=VALUE",
                        help="the server's settings, e.g. SPACE_DECODE_PART_SECONDS=1000 (a request in one part)")
    args = parser.parse_args()
    os.environ.update(item.split("=", 1) for item in args.env)  # the server started below inherits them
    report = {**run(args.root.resolve(), args.only), "env": args.env, "load_average_1min": os.getloadavg()[0]}
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
