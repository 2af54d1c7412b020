"""``python -m benchmarks scale``: Ray against one process, in one run (the ``scale`` extra).

The machine is shared (2 cores, a training run may hold one), so every figure is a ratio between rows measured
in the same run, their rounds interleaved (``--rounds``; the order turns round each time) so that another
process's load hits every row alike.

Corpus: the same ``--lines`` mixed-language lines (Multi30k test_2016_flickr, English, French and Czech in turn,
to German, greedy) through ``translate --src-lang auto`` (one process, ``--threads 1``: one core, as one actor
has), through two such processes started together on half the lines each (what the cores give two plain
processes), and through ``translate-corpus`` on a local Ray cluster of 2 CPUs with 1 and 2 actors (blocks of
``--block-lines``).  Each time counts loading the models (the CLI's process, the actors); the cluster is started
before the timing, and its start is reported on its own.  Reported: lines/s, the ratio 2 actors / 1 actor
(target >= 1.7), the efficiency (that ratio / 2), the same ratio once the actors are up (each run from its first
block back to its last), and whether each output equals the CLI's line for line.

REST (``benchmarks/scale_rest.py``): ``POST /translate`` from ``--clients`` concurrent clients against
``python app.py``'s REST routes and against the Serve application of ``space/scale.py`` with 1 and 2 replicas;
then one replica is killed mid-load and the lost requests and retryable errors are counted.

``--out FILE`` writes the JSON that docs/scale.md's figures are checked against (tests/test_doc_scale.py).
Multi30k is read from ``$TRANSFORMER_HUB_DATA`` (else data/multi30k).
"""
from __future__ import annotations

import argparse
import json
import shlex
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

from .scale_rest import bench_rest, print_rest


ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "space" / "models"
COMMAND = "python -m benchmarks scale --out docs/scale.json"
ARGUMENTS = ("lines", "block_lines", "requests", "clients", "rounds", "only")
ONE_CORE = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lines", type=int, default=2000, help="corpus lines (default 2000)")
    p.add_argument("--block-lines", type=int, default=100, help="translate-corpus's block size (default 100)")
    p.add_argument("--requests", type=int, default=96, help="REST requests per cell (default 96)")
    p.add_argument("--clients", type=int, default=8, help="concurrent REST clients (default 8)")
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds of every row (default 2)")
    p.add_argument("--only", choices=["corpus", "rest"], default=None, help="run one half")
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON here")


def corpus_lines(n: int) -> List[str]:
    from transformer_hub.training.data import corpus_file, default_data_dir, read_lines

    per = [read_lines(corpus_file(default_data_dir(), "test_2016_flickr", lang)) for lang in ("en", "fr", "cs")]
    return [per[i % 3][(i // 3) % len(per[i % 3])] for i in range(n)]


def run_cli(source: Path, out: Path) -> float:
    """Seconds of ``python -m transformer_hub translate --src-lang auto --tgt-lang de --threads 1``."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "transformer_hub", "translate", "--src-lang", "auto", "--tgt-lang", "de",
                    "--threads", "1", "--no-progress", "-i", str(source), "-o", str(out)], cwd=ROOT, check=True,
                   env={**os.environ, **ONE_CORE, "TRANSFORMER_HUB_SPACE_MODELS": str(MODELS)},
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def run_two_clis(source: Path, out: Path) -> float:
    """Seconds until two ``run_cli`` processes started together, each on half of ``source``, have both ended (what
    two plain processes get from the machine's cores, without Ray); ``out`` is their outputs joined."""
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    half = (len(lines) + 1) // 2
    parts = [(out.with_suffix(f".in{i}"), out.with_suffix(f".out{i}")) for i in (0, 1)]
    for (part, _), chunk in zip(parts, (lines[:half], lines[half:])):
        part.write_text("".join(chunk), encoding="utf-8")
    took: List[float] = []
    threads = [threading.Thread(target=lambda p=p, o=o: took.append(run_cli(p, o))) for p, o in parts]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    if len(took) != 2:
        raise RuntimeError("one of the two translate processes failed")
    out.write_text("".join(o.read_text(encoding="utf-8") for _, o in parts), encoding="utf-8")
    return wall


def interleaved(names: List[str], rounds: int) -> Iterator[Tuple[int, str]]:
    """(round, name) for every row in every round, the order reversed every other round."""
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            yield r, name


def bench_corpus(args: argparse.Namespace, folder: Path) -> Dict:
    import ray

    from transformer_hub.scale import start_cluster

    lines = corpus_lines(args.lines)
    source = folder / "corpus.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    start = time.perf_counter()
    start_cluster(ray, cpus=2)
    cluster_s = time.perf_counter() - start
    ray.data.DataContext.get_current().enable_progress_bars = False
    seconds: Dict[str, List[float]] = {"cli": [], "cli2": [], "ray1": [], "ray2": []}
    steady: Dict[str, List[Tuple[int, float]]] = {"ray1": [], "ray2": []}
    outputs: List[Tuple[str, List[str]]] = []
    try:
        for r, name in interleaved(list(seconds), args.rounds):
            out = folder / f"{name}-{r}.txt"
            if name.startswith("cli"):
                took = run_cli(source, out) if name == "cli" else run_two_clis(source, out)
            else:
                took, steady_part = run_ray(source, out, int(name[-1]), args.block_lines)
                steady[name].append(steady_part)
            seconds[name].append(round(took, 2))
            outputs.append((name, out.read_text(encoding="utf-8").splitlines()))
        paper = paper_inputs(source, folder / "cli-0.txt", folder, args.block_lines)
    finally:
        ray.shutdown()
    reference = next(got for name, got in outputs if name == "cli")
    same = {name: all(got == reference for n, got in outputs if n == name) for name in seconds}
    measured = {name: {"rounds_s": took, "seconds": round(sum(took), 2), "identical_to_cli": same[name],
                       "lines_per_s": round(len(lines) * len(took) / sum(took), 2)} for name, took in seconds.items()}
    two_clis = measured.pop("cli2")
    rows = [{"run": "cli" if name == "cli" else "ray", "actors": None if name == "cli" else int(name[-1]), **row}
            for name, row in measured.items()]
    two_clis["over_one_cli"] = round(two_clis["lines_per_s"] / rows[0]["lines_per_s"], 2)
    for row, name in zip(rows[1:], steady):  # the actors' rate once they are up, over all rounds
        row["steady_lines_per_s"] = round(sum(n for n, _ in steady[name]) / sum(t for _, t in steady[name]), 2)
    speedup = rows[2]["lines_per_s"] / rows[1]["lines_per_s"]
    per_round = [round(one / two, 2) for one, two in zip(seconds["ray1"], seconds["ray2"])]
    return {"lines": len(lines), "rounds": args.rounds, "block_lines": args.block_lines,
            "cluster_start_s": round(cluster_s, 2), "results": rows, "two_cli_processes": two_clis,
            "speedup_2_over_1": round(speedup, 2),
            "speedup_per_round": per_round, "efficiency": round(speedup / 2, 2),
            "steady_speedup_2_over_1": round(rows[2]["steady_lines_per_s"] / rows[1]["steady_lines_per_s"], 2),
            "one_actor_over_cli": round(rows[1]["lines_per_s"] / rows[0]["lines_per_s"], 2),
            "per_actor_lines_per_s": round(rows[2]["lines_per_s"] / 2, 2), "paper": paper}


def run_ray(source: Path, out: Path, actors: int, block_lines: int) -> Tuple[float, Tuple[int, float]]:
    """Seconds of ``translate-corpus`` (``run_job``) with ``actors`` actors on the running cluster, and its steady
    part: (lines, seconds) from the first block's return to the last's, without the first ``actors`` blocks
    (those the actors decoded while the others started), so the actors' start is not in it."""
    from transformer_hub.scale import CorpusJob, run_job

    job = CorpusJob(str(source), str(out), dict(model=str(MODELS), src_lang="auto", tgt_lang="de"),
                    block_lines=block_lines, actors=actors, progress=False)
    returned: List[float] = []
    start = time.perf_counter()
    report = run_job(job, on_block=lambda block: returned.append(time.perf_counter()))
    took = time.perf_counter() - start
    steady_lines = report.lines - min(actors * block_lines, report.lines)
    return took, (steady_lines, returned[-1] - returned[0])


def paper_inputs(source: Path, translated: Path, folder: Path, block_lines: int) -> Dict:
    """What the on-paper table for N machines needs beside the per-actor throughput, each measured once here on
    one thread: an actor's model load (a ``Translator`` over space/models), the tokenisation of every line
    (encode + decode of the source by the model the pipeline picks for en->de, a lower bound of a line's
    non-decoding work), the same blocks through that ``Translator`` in this process (an actor's work without Ray),
    and the driver's share (reading the input, cutting and encoding the blocks, writing every
    part and joining them: what one driver does for every actor, done here with the source as the "translation")."""
    from transformer_hub.scale.blocks import Item, PartsFolder, blocks_of, read_items
    from transformer_hub.scale.translator import Translator

    start = time.perf_counter()
    translator = Translator(model=str(MODELS), src_lang="auto", tgt_lang="de")
    load_s = time.perf_counter() - start
    tokenizer = translator.models.models[str(MODELS / "en-de")].tokenizer
    lines = source.read_text(encoding="utf-8").splitlines()
    start = time.perf_counter()  # an actor's work without Ray: the same blocks through the same Translator
    texts = [row["text"] for first in range(0, len(lines), block_lines)
             for row in translator.translate([Item(t) for t in lines[first:first + block_lines]], first)]
    in_process_s = time.perf_counter() - start
    start = time.perf_counter()
    for line in lines:
        tokenizer.decode(tokenizer.encode(line), side="source")
    tokenise_s = time.perf_counter() - start
    outputs = translated.read_text(encoding="utf-8").splitlines()
    start, wire = time.perf_counter(), 0
    items = read_items(source)
    blocks = blocks_of(items, block_lines)
    parts = PartsFolder(folder / "driver.txt")
    parts.open({"driver": True})
    for b, block in enumerate(blocks):  # what goes to an actor and what comes back, as _translate_blocks has it
        sent = json.dumps([(i.text, i.error) for i in block], ensure_ascii=False)
        rows = [{"id": b * block_lines + k, "text": outputs[b * block_lines + k], "src_lang": "en",
                 "model": str(MODELS / "en-de")} for k in range(len(json.loads(sent)))]
        back = json.dumps(rows, ensure_ascii=False)
        wire += len(sent.encode()) + len(back.encode())
        parts.write(b, json.loads(back))
    parts.join(len(blocks), jsonl=False)
    driver_s = time.perf_counter() - start
    return {"model_load_s": round(load_s, 2), "in_process_lines_per_s": round(len(lines) / in_process_s, 2),
            "in_process_identical_to_cli": texts == outputs, "tokenise_lines_per_s": round(len(lines) / tokenise_s, 1),
            "driver_lines_per_s": round(len(lines) / driver_s, 1),
            "wire_bytes_per_line": round(wire / len(lines), 1)}


class OthersLoad:
    """Samples, every ``period`` seconds, the CPU that processes outside this benchmark's tree use (a training
    run, other jobs): their mean share of a core over the benchmark says what the ratios were measured under."""

    def __init__(self, period: float = 2.0) -> None:
        self.period, self.cpu, self.stop = period, 0.0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "OthersLoad":
        self.start = time.perf_counter()
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()
        self.share = round(self.cpu / (time.perf_counter() - self.start), 2)

    def _run(self) -> None:
        from .app import process_tree

        last = self._times()
        while not self.stop.wait(self.period):
            ours, now = set(process_tree(os.getpid())), self._times()
            self.cpu += sum(t - last.get(pid, t) for pid, t in now.items() if pid not in ours)
            last = now

    @staticmethod
    def _times() -> Dict[int, float]:
        from .app import stat_cpu_s

        used = {int(entry.name): stat_cpu_s(int(entry.name)) for entry in os.scandir("/proc") if entry.name.isdigit()}
        return {pid: seconds for pid, seconds in used.items() if seconds is not None}


def run(args: argparse.Namespace) -> Dict:
    command = "python -m benchmarks " + shlex.join(sys.argv[1:]) if sys.argv[1:2] == ["scale"] else COMMAND
    report: Dict = {"benchmark": "scale", "command": command, "arguments": {k: str(v) for k, v in vars(args).items()
                                                                           if k in ARGUMENTS},
                    "cpus": os.cpu_count(),
                    "load_average_at_start": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="bench_scale_") as folder, OthersLoad() as others:
        if args.only in (None, "corpus"):
            report["corpus"] = bench_corpus(args, Path(folder))
        if args.only in (None, "rest"):
            report["rest"] = bench_rest(args)
    report["others_core_share"] = others.share
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print_report(report)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"results written to {args.out}")
    return report


def print_report(report: Dict) -> None:
    print(f"scale · {report['cpus']} CPUs · load average at start {report['load_average_at_start']}")
    corpus = report.get("corpus")
    if corpus:
        print(f"corpus: {corpus['lines']} lines, blocks of {corpus['block_lines']}; cluster start "
              f"{corpus['cluster_start_s']} s (not counted)")
        for r in corpus["results"]:
            name = "translate (1 process)" if r["run"] == "cli" else f"translate-corpus, {r['actors']} actor(s)"
            print(f"  {name:<32} {r['seconds']:>8} s {r['lines_per_s']:>8} lines/s  identical to the CLI's: "
                  f"{r['identical_to_cli']}")
        two = corpus["two_cli_processes"]
        print(f"  {'two translate processes, halves':<32} {two['seconds']:>8} s {two['lines_per_s']:>8} lines/s  "
              f"identical to the CLI's: {two['identical_to_cli']}  ({two['over_one_cli']}x one)")
        print(f"  2 actors / 1 actor: {corpus['speedup_2_over_1']}x (target >= 1.7), efficiency "
              f"{corpus['efficiency']}; 1 actor / CLI: {corpus['one_actor_over_cli']}x; once up: "
              f"{corpus['steady_speedup_2_over_1']}x")
        paper = corpus["paper"]
        print(f"  one Translator in this process, the same blocks: {paper['in_process_lines_per_s']} lines/s "
              f"(identical to the CLI's: {paper['in_process_identical_to_cli']})")
        print(f"  for the table on paper: models load in {paper['model_load_s']} s, tokenisation "
              f"{paper['tokenise_lines_per_s']} lines/s, the driver {paper['driver_lines_per_s']} lines/s, "
              f"{paper['wire_bytes_per_line']} bytes per line on the wire")
    if report.get("rest"):
        print_rest(report["rest"])
    print(f"other processes (not this benchmark's) used {report['others_core_share']} of a core on average")
