"""How long a playground run takes to start, cold against warm (not a test), and what a warm spare costs.

    python -m benchmarks playground_start [--repeat 3] [--out docs/playground/warm_start.json]

Cold: ``TrainingProcess(config)``, a fresh interpreter that imports torch and the library and then builds the
run; warm: a spare ``TrainingProcess()`` that has done the imports (``ready``) is given the same run with
``start(config)``, as the Space's runner does.  Each is timed from the call to the run's first event (``start``:
the model built, its first attention picture taken); cold and warm alternate so the machine's other load hits
both alike.  Prints the medians, the ratio cold / warm, and a ready spare's resident memory (VmRSS) and the
server's share: what keeping ``SPARES`` of them costs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from space.playground.runs import SPARE_IDLE_SECONDS, SPARES
from transformer_hub.playground import RunConfig, TrainingProcess
from transformer_hub.playground.worker import WARM_UP

CONFIG = RunConfig(task="reverse", budget_seconds=5)


def first_event_seconds(process: TrainingProcess, started: float) -> float:
    """Seconds from ``started`` to the run's first event; the process is closed after."""
    try:
        while process.poll(0.01) is None:
            pass
        return time.monotonic() - started
    finally:
        process.close()


def resident_mib(pid: int) -> float:
    """A process's resident memory in MiB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def measure(repeat: int) -> dict:
    cold, warm, memory = [], [], []
    for _ in range(repeat):
        started = time.monotonic()
        cold.append(first_event_seconds(TrainingProcess(CONFIG), started))
        spare = TrainingProcess()
        while not spare.ready:
            time.sleep(0.05)
        time.sleep(0.5)  # the child has signalled ready: let it settle into its wait
        memory.append(resident_mib(spare._process.pid))
        started = time.monotonic()
        spare.start(CONFIG)
        warm.append(first_event_seconds(spare, started))
    cold_s, warm_s = statistics.median(cold), statistics.median(warm)
    return {"repeat": repeat, "config": CONFIG.to_dict(), "cold_seconds": [round(x, 3) for x in cold],
            "warm_seconds": [round(x, 3) for x in warm], "cold_median_s": round(cold_s, 2),
            "warm_median_s": round(warm_s, 2), "ratio_cold_to_warm": round(cold_s / warm_s, 1),
            "spare_rss_mib": round(statistics.median(memory), 0), "spares": SPARES,
            "spares_rss_mib": round(SPARES * statistics.median(memory), 0), "cpus": os.cpu_count(),
            "spare_idle_seconds": SPARE_IDLE_SECONDS, "warm_up_steps": WARM_UP.max_steps,
            "command": "python -m benchmarks playground_start"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("docs/playground/warm_start.json"))


def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # the runs' fresh interpreters, as on the Space
    result = measure(args.repeat)
    print(f"cold start (fresh interpreter) to the first event: median {result['cold_median_s']} s "
          f"{result['cold_seconds']}")
    print(f"warm start (a ready spare)     to the first event: median {result['warm_median_s']} s "
          f"{result['warm_seconds']}")
    print(f"ratio cold / warm: {result['ratio_cold_to_warm']}x; a ready spare holds {result['spare_rss_mib']:.0f} MiB "
          f"resident, the runner's {SPARES} spares {result['spares_rss_mib']:.0f} MiB")
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0

