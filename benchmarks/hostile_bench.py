"""``python -m benchmarks hostile``: the hostile documents, at the sizes first reported, against ``python app.py``
as deployed (the shipped en-de model, the default limits), and a /suggest flood.

Each upload (the issue's cases and one valid document per format, one at a time) is measured on the server's whole
process tree (its forkserver and document workers, reaped or not, and the decoding worker): CPU seconds, the peak
resident memory above its idle just before (sampled every 20 ms; RSS, in which a worker's pages shared with its
forkserver count again, and PSS, which splits them), the RSS left 2 s after the answer, and the
worst latency of ``GET /languages`` polled every 200 ms meanwhile.  Then ``--flood-clients`` clients post the
largest suggestions the field limits allow for ``--flood-seconds``; the database's size before and after.
Targets: <= 10 s CPU, <= 500 MB above idle, back within 50 MB, ``/languages`` within 1 s, no 5xx.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Tuple

import requests

from space.hosting.access import SUGGESTIONS_MAX_MB

from .app import app_process, process_tree, stat_cpu_s
from .documents import valid_documents
from .hostile import hostile_cases
from .hostile_table import TARGETS, flood_markdown, markdown, per_format

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_S, POLL_S, SETTLE_S = 0.02, 0.2, 2.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scale", type=float, default=1.0, help="the cases' sizes (1.0: the issue's)")
    parser.add_argument("--flood-clients", type=int, default=8)
    parser.add_argument("--flood-seconds", type=float, default=20.0)
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here (docs/hostile.json)")


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of ``pid``'s tree, reaped children included (a document worker's, once its forkserver waited)."""
    return sum(stat_cpu_s(member, reaped=True) or 0.0 for member in process_tree(pid))


def tree_memory_mb(pid: int, field: str = "Rss:") -> float:
    """The summed resident memory of ``pid``'s tree now: ``Rss:`` (a forked worker's pages shared with its
    forkserver counted again: an upper bound) or ``Pss:`` (shared pages split between their sharers)."""
    total = 0.0
    for member in process_tree(pid):
        try:
            for line in Path(f"/proc/{member}/smaps_rollup").read_text().splitlines():
                if line.startswith(field):
                    total += int(line.split()[1]) / 1024.0
        except (OSError, ValueError):
            pass
    return total


class Watch:
    """While an upload runs: the tree's RSS sampled, ``/languages`` polled (worst latency, failures)."""

    def __init__(self, url: str, pid: int) -> None:
        self.url, self.pid, self.done = url, pid, threading.Event()
        self.peak_mb = self.peak_pss_mb = self.worst_ms = 0.0
        self.failed = self.polls = 0
        self.threads = [threading.Thread(target=self._sample), threading.Thread(target=self._poll)]

    def _sample(self) -> None:
        while not self.done.is_set():
            self.peak_mb = max(self.peak_mb, tree_memory_mb(self.pid))
            self.peak_pss_mb = max(self.peak_pss_mb, tree_memory_mb(self.pid, "Pss:"))
            time.sleep(SAMPLE_S)

    def _poll(self) -> None:
        while not self.done.is_set():
            start = time.perf_counter()
            try:
                ok = requests.get(self.url + "languages", timeout=5).status_code == 200
            except requests.RequestException:
                ok = False
            self.worst_ms = max(self.worst_ms, 1000 * (time.perf_counter() - start))
            self.polls, self.failed = self.polls + 1, self.failed + (not ok)
            time.sleep(POLL_S)

    def __enter__(self) -> "Watch":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        for thread in self.threads:
            thread.join()


def measure_upload(url: str, pid: int, name: str, suffix: str, data: bytes) -> Dict:
    """One upload to ``/translate_file`` measured (see the module's docstring)."""
    idle, idle_pss, cpu = tree_memory_mb(pid), tree_memory_mb(pid, "Pss:"), tree_cpu_s(pid)
    start = time.perf_counter()
    with Watch(url, pid) as watch:
        response = requests.post(url + "translate_file", files={"file": ("doc" + suffix, data)},
                                 data={"source": "en", "target": "de"}, timeout=600)
    wall = time.perf_counter() - start
    time.sleep(SETTLE_S)
    body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
    return {"case": name, "suffix": suffix, "upload_bytes": len(data), "status": response.status_code,
            "error": body.get("error"), "wall_s": round(wall, 2), "cpu_s": round(tree_cpu_s(pid) - cpu, 2),
            "idle_rss_mb": round(idle, 1), "rss_above_idle_mb": round(max(0.0, watch.peak_mb - idle), 1),
            "pss_above_idle_mb": round(max(0.0, watch.peak_pss_mb - idle_pss), 1),
            "rss_after_mb": round(tree_memory_mb(pid) - idle, 1), "languages_ms": round(watch.worst_ms, 1),
            "languages_failed": watch.failed, "languages_polls": watch.polls}


def flood(url: str, db: Path, clients: int, seconds: float) -> Dict:
    """``clients`` posting the largest suggestions allowed (4,000 bytes in q and in s) for ``seconds``."""
    q, s = "xx" + "\U0001F436" * 999, "\U0001F415" * 1000  # 4,000 bytes each with q's "n " (the per-field limits)
    before = _db_bytes(db)
    statuses: Dict[str, int] = {}
    lock, stop = threading.Lock(), time.monotonic() + seconds

    def client(n: int) -> None:
        with requests.Session() as session:
            while time.monotonic() < stop:
                try:
                    status = str(session.post(url + "suggest", json={"q": f"{n % 10} {q}", "s": s, "source": "en",
                                                                     "target": "de", "model": "en-de"},
                                              timeout=30).status_code)
                except requests.RequestException:
                    status = "no answer"
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    stored = sqlite3.connect(db).execute("SELECT COUNT(*) FROM suggestions").fetchone()[0]
    return {"clients": clients, "seconds": seconds, "bytes_each": len(f"0 {q}".encode()) + len(s.encode()),
            "statuses": statuses, "stored": stored, "db_before_mb": round(before / 2**20, 3),
            "db_after_mb": round(_db_bytes(db) / 2**20, 3), "cap_mb": SUGGESTIONS_MAX_MB}


def _db_bytes(db: Path) -> int:
    """The database's bytes on disk: its file and SQLite's journal or write-ahead log beside it."""
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))


def _cases(scale: float) -> List[Tuple[str, str, bytes]]:
    cases = [(name, suffix, data) for name, (suffix, data) in hostile_cases(scale).items()]
    return cases + [(f"valid{suffix}", suffix, data) for suffix, data in valid_documents().items()]


def verdicts(report: Dict) -> List[str]:
    """Each target of the issue against the worst figure measured."""
    worst = {key: max(row[key] for row in report["uploads"]) for key in TARGETS}
    lines = [f"{key}: worst {worst[key]:g} (target <= {TARGETS[key]:g})" for key in TARGETS]
    fives = [row["case"] for row in report["uploads"] if row["status"] >= 500]
    lines.append(f"5xx answers: {len(fives)} {fives if fives else ''}".rstrip())
    return lines


def run(args: argparse.Namespace) -> Dict:
    with tempfile.TemporaryDirectory(prefix="hostile_") as folder, contextlib.ExitStack() as stack:
        db = Path(folder) / "suggestions.db"
        env = {"SPACE_SUGGESTIONS": "1", "SPACE_SUGGESTIONS_DB": str(db)}
        url, server = stack.enter_context(app_process(None, extra_env=env))
        measure_upload(url, server.pid, "warm-up", ".txt", valid_documents()[".txt"])  # the model loaded first
        uploads = [measure_upload(url, server.pid, *case) for case in _cases(args.scale)]
        report = {"benchmark": "hostile documents and a /suggest flood",
                  "command": f"python -m benchmarks hostile --out {args.out or 'docs/hostile.json'}",
                  "cores": os.cpu_count(), "load_average_1min": round(os.getloadavg()[0], 2),
                  "scale": args.scale, "uploads": uploads,
                  "suggest_flood": flood(url, db, args.flood_clients, args.flood_seconds)}
    report["per_format"] = per_format(report)
    report["verdicts"] = verdicts(report)
    print(markdown(report))
    print(flood_markdown(report))
    print("\n".join(report["verdicts"]))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"results written to {args.out}")
    return report
