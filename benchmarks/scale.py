"""``python -m benchmarks scale``: Ray against one process, in one run (the ``scale`` extra).

Corpus: the same ``--lines`` mixed-language lines (Multi30k test_2016_flickr, English, French and Czech in turn,
to German, greedy) through ``translate --src-lang auto`` (one process, ``--threads 1``: one core, as one actor
has) and through ``translate-corpus`` on a local Ray cluster of 2 CPUs with 1 and then 2 actors (blocks of
``--block-lines``).  Each time counts loading the models (the CLI's process, the actors); the cluster is started
before the timing, and its start is reported on its own.  Reported: lines/s, the ratio 2 actors / 1 actor
(target >= 1.7), the efficiency (that ratio / 2), and whether each output equals the CLI's line for line.

REST: ``POST /translate`` (one Multi30k sentence per request, beam 4, engine pytorch, model en-de) from
``--clients`` concurrent clients against ``python app.py``'s REST routes and against ``python -m space.scale``
with 1 and 2 replicas.  Reported: requests/s, p50/p95 latency, errors, the ratio 2 replicas / 1 replica (target
>= 1.4), and the share of a core that Serve's HTTP proxy (its ``ProxyActor`` process) used while measured.

``--out FILE`` writes the JSON that docs/scale.md's figures are checked against (tests/test_doc_scale.py).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from .app import WARMUP, app_process, free_port, measure_rest, process_tree

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "space" / "models"
COMMAND = "python -m benchmarks scale --out docs/scale.json"
ONE_CORE = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lines", type=int, default=2000, help="corpus lines (default 2000)")
    p.add_argument("--block-lines", type=int, default=100, help="translate-corpus's block size (default 100)")
    p.add_argument("--requests", type=int, default=96, help="REST requests per cell (default 96)")
    p.add_argument("--clients", type=int, default=8, help="concurrent REST clients (default 8)")
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


def bench_corpus(args: argparse.Namespace, folder: Path) -> Dict:
    import ray

    from transformer_hub.scale import CorpusJob, run_job

    lines = corpus_lines(args.lines)
    source = folder / "corpus.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cli_s = run_cli(source, folder / "cli.txt")
    reference = (folder / "cli.txt").read_text(encoding="utf-8").splitlines()
    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": ONE_CORE})
    cluster_s = time.perf_counter() - start
    ray.data.DataContext.get_current().enable_progress_bars = False
    rows = [{"run": "cli", "actors": None, "seconds": round(cli_s, 2), "lines_per_s": round(len(lines) / cli_s, 2),
             "identical_to_cli": True}]
    try:
        for actors in (1, 2):
            out = folder / f"ray{actors}.txt"
            job = CorpusJob(str(source), str(out), dict(model=str(MODELS), src_lang="auto", tgt_lang="de"),
                            block_lines=args.block_lines, actors=actors, progress=False)
            start = time.perf_counter()
            run_job(job)
            seconds = time.perf_counter() - start
            same = out.read_text(encoding="utf-8").splitlines() == reference
            rows.append({"run": "ray", "actors": actors, "seconds": round(seconds, 2),
                         "lines_per_s": round(len(lines) / seconds, 2), "identical_to_cli": same})
    finally:
        ray.shutdown()
    speedup = rows[2]["lines_per_s"] / rows[1]["lines_per_s"]
    return {"lines": len(lines), "block_lines": args.block_lines, "cluster_start_s": round(cluster_s, 2),
            "results": rows, "speedup_2_over_1": round(speedup, 2), "efficiency": round(speedup / 2, 2),
            "one_actor_over_cli": round(rows[1]["lines_per_s"] / rows[0]["lines_per_s"], 2)}


def cpu_s(pids: List[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            pass
    return total


def proxy_pids(root: int) -> List[int]:
    """Serve's HTTP proxy among ``root``'s descendants (Ray titles the process ``ray::ProxyActor``)."""
    found = []
    for pid in process_tree(root):
        try:
            if b"ProxyActor" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            pass
    return found


@contextlib.contextmanager
def serve_process(replicas: int, timeout: float = 300.0) -> Iterator[Tuple[str, subprocess.Popen]]:
    """``python -m space.scale --replicas N`` on a free port; yields (url, process) once every replica answers."""
    port = free_port()
    log = tempfile.TemporaryFile()
    process = subprocess.Popen([sys.executable, "-m", "space.scale", "--replicas", str(replicas), "--port", str(port),
                                "--models-dir", str(MODELS)], cwd=ROOT, env={**os.environ, **ONE_CORE},
                               stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"space.scale exited ({process.returncode}): {log.read().decode()[-2000:]}")
            try:
                with urllib.request.urlopen(url + "languages", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"space.scale did not answer on {url} within {timeout:.0f} s")
            time.sleep(1)
        yield url, process
    finally:
        process.send_signal(2)  # SIGINT: serve.shutdown(), then the local cluster stops with its driver
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def rest_cell(name: str, url: str, process: subprocess.Popen, args: argparse.Namespace,
              replicas: Optional[int]) -> Dict:
    measure_rest(url, "en-de", args.clients, 4 * args.clients, warmup=0)  # every replica's worker has the model
    proxies = proxy_pids(process.pid) if replicas else []
    before, start = cpu_s(proxies), time.perf_counter()
    row = measure_rest(url, "en-de", args.clients, args.requests, warmup=WARMUP)
    row.pop("outputs")
    wall = time.perf_counter() - start
    row.update(server=name, replicas=replicas,
               proxy_core_share=round((cpu_s(proxies) - before) / wall, 2) if proxies else None)
    return row


def bench_rest(args: argparse.Namespace) -> Dict:
    rows = []
    with app_process(None) as (url, process):
        rows.append(rest_cell("app.py", url, process, args, None))
    for replicas in (1, 2):
        with serve_process(replicas) as (url, process):
            rows.append(rest_cell("serve", url, process, args, replicas))
    speedup = rows[2]["requests_per_s"] / rows[1]["requests_per_s"]
    return {"clients": args.clients, "requests": args.requests, "results": rows,
            "speedup_2_over_1": round(speedup, 2), "one_replica_over_app": round(rows[1]["requests_per_s"]
                                                                              / rows[0]["requests_per_s"], 2)}


def run(args: argparse.Namespace) -> Dict:
    report: Dict = {"benchmark": "scale", "command": COMMAND, "cpus": os.cpu_count(),
                    "load_average_at_start": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="bench_scale_") as folder:
        if args.only in (None, "corpus"):
            report["corpus"] = bench_corpus(args, Path(folder))
        if args.only in (None, "rest"):
            report["rest"] = bench_rest(args)
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
        print(f"  2 actors / 1 actor: {corpus['speedup_2_over_1']}x (target >= 1.7), efficiency "
              f"{corpus['efficiency']}; 1 actor / CLI: {corpus['one_actor_over_cli']}x")
    rest = report.get("rest")
    if rest:
        print(f"REST /translate: {rest['clients']} clients, {rest['requests']} requests per cell")
        for r in rest["results"]:
            name = "app.py" if r["server"] == "app.py" else f"serve, {r['replicas']} replica(s)"
            print(f"  {name:<20} {r['requests_per_s']:>7} req/s  p50 {r['p50_ms']:>7} ms  p95 {r['p95_ms']:>7} ms  "
                  f"errors {r['errors']}  proxy {r['proxy_core_share'] if r['proxy_core_share'] is not None else '-'}"
                  " of a core")
        print(f"  2 replicas / 1 replica: {rest['speedup_2_over_1']}x (target >= 1.4); 1 replica / app.py: "
              f"{rest['one_replica_over_app']}x")
