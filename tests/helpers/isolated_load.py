"""Load checkpoints in processes of their own and report each load's peak memory.

``ru_maxrss`` is a process's peak: measured in the test process it cannot grow once any earlier test peaked
higher, so a hostile checkpoint's allocation would go unseen.  Here a helper process imports the library once
(and runs no torch op, so no OpenMP pool exists to break across ``fork``); every load then runs in a child forked
from it, whose peak starts at the helper's current size, and reports its growth.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]

HELPER = r'''
import json, os, resource, sys, time
from transformer_hub import Transformer  # imported once, before any fork


def attempt(request):
    if "allocate_mb" in request:  # a control: the meter must see a real allocation
        block = bytearray(request["allocate_mb"] * 1024 * 1024)
        block[::4096] = b"\1" * len(block[::4096])
    else:
        Transformer.from_pretrained(request["folder"])


def child(request, write_fd):
    base, start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.perf_counter()
    report = {"error": None}
    try:
        attempt(request)
    except BaseException as exc:  # noqa: BLE001 - reported to the test, which decides
        report["error"] = {"types": [f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__],
                           "message": str(exc)}
    report.update(seconds=time.perf_counter() - start,
                  peak_growth_kib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base)
    os.write(write_fd, json.dumps(report).encode())


for line in sys.stdin:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            child(json.loads(line), write_fd)
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        answer = pipe.read().decode() or json.dumps({"error": {"types": ["crash"], "message": "the child died"}})
    os.waitpid(pid, 0)
    print(answer, flush=True)
'''


class IsolatedLoader:
    """``load(folder)`` / ``allocate(mb)`` -> {"error": None | {"types", "message"}, "seconds", "peak_growth_kib"}."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               "OMP_NUM_THREADS": "1", "TRANSFORMER_HUB_DISABLE_PLUGINS": "1"}
        self.process = subprocess.Popen([sys.executable, "-c", HELPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        env=env, text=True)

    def _ask(self, request: Dict[str, Any]) -> Dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer: Optional[str] = self.process.stdout.readline()
        if not answer:
            raise RuntimeError(f"the loading helper exited with status {self.process.wait()}")
        return json.loads(answer)

    def load(self, folder: Path) -> Dict[str, Any]:
        return self._ask({"folder": str(folder)})

    def allocate(self, megabytes: int) -> Dict[str, Any]:
        return self._ask({"allocate_mb": megabytes})

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def error_types(report: Dict[str, Any]) -> List[str]:
    return report["error"]["types"] if report["error"] else []
