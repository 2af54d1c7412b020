"""``python -m benchmarks cli_memory``: the command line's peak memory against the number of lines it translates.

``translate --src-lang en --tgt-lang cs --split-sentences`` (the default model for the direction, the domain told
per sentence) reads N lines of the test sets, a line of each in turn: Debian's catalogs (software strings and
messages), LibreOffice's help (paragraphs), Multi30k's test_2016_flickr (captions), each from its start again
when its lines run out. Each N runs as its own process (``--threads 1``), and its peak resident memory
is that process's own (``os.wait4``'s ``ru_maxrss``). The target: at most 1.5 GB at 10,000 lines, flat in N (the
CLI streams: it holds one batch, not the whole input and its results). ``--out FILE`` writes the results as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

from transformer_hub.training.data import DataError, corpus_file, default_data_dir, read_lines

TARGET_MB = 1536


def corpora() -> Dict[str, Path]:
    return {"debian-catalogs": Path(os.environ.get("DEBIAN_CATALOGS", "data/debian-catalogs")),
            "libreoffice-help": Path(os.environ.get("TRANSFORMER_HUB_LIBREOFFICE_HELP", "data/libreoffice-help")),
            "multi30k": default_data_dir()}


def input_lines(n: int) -> List[str]:
    """``n`` non-empty English test lines, a line of each corpus in turn (so that every prefix holds all three
    domains and needs all their models), each corpus from its start again when its lines run out."""
    found = []
    for name, folder in corpora().items():
        split = "test_2016_flickr" if name == "multi30k" else "test"
        try:
            found.append([line for line in read_lines(corpus_file(folder, split, "en"), allow_empty=True)
                          if line.strip()])
        except DataError as exc:
            raise SystemExit(f"cli_memory needs the {name} corpus: {exc}") from exc
    return [found[i % len(found)][(i // len(found)) % len(found[i % len(found)])] for i in range(n)]


def measure(n: int, threads: int) -> Dict[str, float]:
    """One ``translate`` process over ``n`` lines: its peak RSS (MB), seconds and lines out."""
    with tempfile.TemporaryDirectory() as folder:
        source, output = Path(folder) / "in.en", Path(folder) / "out.cs"
        source.write_text("\n".join(input_lines(n)) + "\n", encoding="utf-8")
        command = [sys.executable, "-m", "transformer_hub", "translate", "--src-lang", "en", "--tgt-lang", "cs",
                   "--split-sentences", "--threads", str(threads), "--input", str(source), "--output", str(output),
                   "--no-progress"]
        started = time.perf_counter()
        process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        if status != 0:
            raise SystemExit(f"translate over {n} lines failed (status {status}): {' '.join(command)}")
        lines_out = len(output.read_text(encoding="utf-8").splitlines())
    return {"lines": n, "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "seconds": round(seconds, 1),
            "lines_out": lines_out}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lines", default="1000,10000", help="comma-separated line counts (default: 1000,10000)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", help="write the results as JSON here (e.g. docs/cli_memory.json)")


def run(args: argparse.Namespace) -> dict:
    rows = []
    for n in (int(x) for x in args.lines.split(",")):
        rows.append(measure(n, args.threads))
        print(f"{n} lines: peak RSS {rows[-1]['peak_rss_mb']} MB, {rows[-1]['seconds']} s", flush=True)
    growth = rows[-1]["peak_rss_mb"] / rows[0]["peak_rss_mb"]
    result = {"command": f"python -m benchmarks cli_memory --lines {args.lines}", "direction": "en-cs",
              "options": "--split-sentences, the default model and domain", "target_mb": TARGET_MB, "rows": rows,
              "growth": round(growth, 3), "within_target": rows[-1]["peak_rss_mb"] <= TARGET_MB}
    print(f"peak RSS at {rows[-1]['lines']} lines / at {rows[0]['lines']}: {growth:.2f}x; "
          f"target <= {TARGET_MB} MB: {'met' if result['within_target'] else 'missed'}")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result
