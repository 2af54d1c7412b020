"""The server's processes end with it: on SIGTERM, ``serve``'s ``on_stop`` runs before uvicorn raises the signal
again, so the Playground's spare training processes (spawned, each ~500 MB with torch imported) go too."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
SCRIPT = """
from fastapi import FastAPI
from space.playground.runs import PlaygroundRunner
from space.server import serve

runner = PlaygroundRunner()
runner.warm()
serve(FastAPI(), announce="listening {url}", on_stop=runner.close_spares)
"""


def _children(pid: int) -> list:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid):
            found.append(int(status.parent.name))
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text().split("State:\t", 1)[1][0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has ended: only its exit status waits for its (new) parent


def test_sigterm_ends_the_playgrounds_spare_processes_with_the_server():
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": "0", "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().startswith("listening"), "the server did not start"
        spares = [pid for pid in _children(server.pid) if _is_spawned(pid)]
        assert len(spares) >= 2, _children(server.pid)
        server.send_signal(signal.SIGTERM)
        assert server.wait(60) == -signal.SIGTERM  # it still ends as a SIGTERM ends a process
        deadline = time.monotonic() + 10
        while any(_running(pid) for pid in spares) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in spares if _running(pid)]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _is_spawned(pid: int) -> bool:
    return "multiprocessing.spawn" in _cmdline(pid) or "spawn_main" in _cmdline(pid)
