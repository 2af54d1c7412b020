"""The public server's probes of a hostile visitor, each measured on ``python app.py`` of a checkout (``--root``,
default this one: run it on two checkouts for a before/after), one at a time:

    python -m benchmarks.hostile_probes [--root CHECKOUT] [--out results.json]

Documents of costly text (``hostile.text_cases``: a .docx word of 60,000 dashes, 60,000 NUL bytes, 12 MB of text
in a .epub) to ``/translate_file``, an HTML text of 16 paragraphs and 15,900 dashes to ``/translate``: each one's
status, wall time, the server tree's CPU seconds and peak RSS above idle, and the worst latency of ``GET
/languages`` polled every 100 ms from another address meanwhile (the targets: 0.5 s, 2 s CPU, 200 MB). Then 520
half-sent request lines held open for 5 s while ``/languages`` is asked from another address (how many of its
answers were 200, the worst latency); a JSON-RPC body nested 100,000 deep to the MCP server (status, lines the
server logged); one client's suggestions for 20 s (statuses, the store's size).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, Tuple

import requests

from .app import free_port
from .hostile import text_cases
from . import hostile_bench
from .hostile_bench import tree_cpu_s, tree_memory_mb

OTHER = "127.0.0.2"  # another client: the probes come from 127.0.0.1


@contextlib.contextmanager
def server(root: Path, log: Path) -> Iterator[Tuple[str, subprocess.Popen]]:
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port), "PYTHONPATH": str(root),
           "GRADIO_ANALYTICS_ENABLED": "False", "GRADIO_MCP_SERVER": "true", "SPACE_SUGGESTIONS": "1",
           "SPACE_SUGGESTIONS_DB": str(log.with_suffix(".db"))}
    with open(log, "w") as out:
        process = subprocess.Popen([sys.executable, "app.py"], cwd=root, env=env, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(600):
            with contextlib.suppress(requests.RequestException):
                if requests.get(url + "languages", timeout=5).status_code == 200:
                    break
            time.sleep(0.5)
        yield url, process
    finally:
        process.terminate()
        process.wait(60)


def _languages_ms(url: str) -> Tuple[bool, float]:
    host, port = url.split("//")[1].rstrip("/").split(":")
    start = time.perf_counter()
    try:
        with socket.create_connection((host, int(port)), timeout=10, source_address=(OTHER, 0)) as sock:
            sock.sendall(b"GET /languages HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            ok = sock.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        ok = False
    return ok, 1000 * (time.perf_counter() - start)


class Watch(hostile_bench.Watch):
    """``hostile_bench.Watch`` (the tree's peak RSS, ``/languages`` polled) asking from another address."""

    def _poll(self) -> None:
        while not self.done.is_set():
            ok, ms = _languages_ms(self.url)
            self.polls, self.failed, self.worst_ms = self.polls + 1, self.failed + (not ok), max(self.worst_ms, ms)
            time.sleep(0.1)


def measure(url: str, pid: int, name: str, send) -> Dict:
    idle, cpu, start = tree_memory_mb(pid), tree_cpu_s(pid), time.perf_counter()
    with Watch(url, pid) as watch:
        try:
            response = send()
            status, answer = response.status_code, response.text[:160]
        except requests.RequestException as exc:
            status, answer = "no answer", type(exc).__name__
    return {"probe": name, "status": status, "answer": answer, "wall_s": round(time.perf_counter() - start, 2),
            "cpu_s": round(tree_cpu_s(pid) - cpu, 2), "rss_above_idle_mb": round(max(0.0, watch.peak_mb - idle), 1),
            "languages_worst_ms": round(watch.worst_ms, 1),
            "languages_ok": f"{watch.polls - watch.failed}/{watch.polls}"}


def half_sent_lines(url: str, count: int = 520, seconds: float = 5.0) -> Dict:
    host, port = url.split("//")[1].rstrip("/").split(":")
    held = []
    for _ in range(count):
        with contextlib.suppress(OSError):
            sock = socket.create_connection((host, int(port)), timeout=5)
            sock.sendall(b"GET /languages HT")
            held.append(sock)
    answers, stop = [], time.monotonic() + seconds
    while time.monotonic() < stop:
        answers.append(_languages_ms(url))
        time.sleep(0.1)
    for sock in held:
        sock.close()
    return {"probe": f"{count} half-sent request lines", "held": len(held),
            "languages_ok": f"{sum(ok for ok, _ in answers)}/{len(answers)}",
            "languages_worst_ms": round(max(ms for _, ms in answers), 1)}


def run(root: Path) -> Dict:
    with tempfile.TemporaryDirectory(prefix="probes_") as folder:
        log = Path(folder) / "server.log"
        with server(root, log) as (url, process):
            post = lambda path, **kw: (lambda: requests.post(url + path, timeout=600, **kw))  # noqa: E731
            requests.post(url + "translate", json={"q": "A dog runs.", "source": "en", "target": "de"}, timeout=600)
            rows = [measure(url, process.pid, name, post("translate_file", files={"file": ("doc" + suffix, data)},
                                                         data={"source": "en", "target": "de"}))
                    for name, (suffix, data) in text_cases().items()]
            html = "".join("<p>" + "-" * (15_900 // 16) + "</p>" for _ in range(16))
            rows.append(measure(url, process.pid, "html 16 <p>, 15,900 dashes", post(
                "translate", json={"q": html, "source": "en", "target": "de", "format": "html"})))
            rows.append(half_sent_lines(url))
            lines = len(log.read_text().splitlines())
            deep = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
            mcp = requests.post(url + "gradio_api/mcp/", data=deep, timeout=60, headers={
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
            time.sleep(0.5)
            rows.append({"probe": "MCP body nested 100,000 deep", "status": mcp.status_code,
                         "log_lines": len(log.read_text().splitlines()) - lines})
            rows.append(_suggestions(url, log.with_suffix(".db")))
    return {"root": str(root), "probes": rows}


def _suggestions(url: str, db: Path, seconds: float = 20.0) -> Dict:
    statuses: Dict[str, int] = {}
    q, s, stop = "\U0001F436" * 998, "\U0001F415" * 1000, time.monotonic() + seconds  # q: 3,999 bytes with n
    with requests.Session() as session:
        n = 0
        while time.monotonic() < stop:
            n += 1
            code = str(session.post(url + "suggest", json={"q": f"{n:06d} {q}", "s": s, "source": "en", "target": "de"},
                                    timeout=30).status_code)
            statuses[code] = statuses.get(code, 0) + 1
    size = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))
    return {"probe": f"one client's suggestions for {seconds:g} s", "statuses": statuses,
            "store_mb": round(size / 2 ** 20, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--out", type=Path, default=None)
    report = run(parser.parse_args().root.resolve())
    text = json.dumps(report, indent=1)
    print(text)
    out = parser.parse_args().out
    if out:
        out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
