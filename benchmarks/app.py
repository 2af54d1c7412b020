"""App benchmark (not a test): latency and throughput of ``/translate`` through ``gradio_client``.

    python -m benchmarks app [--model DIR_OR_REPO] [--clients 1,8] [--requests 64] [--beam-size 4]

Launches the app (``python app.py``) as its own process on 127.0.0.1, as it is deployed (or uses ``--url``,
which must be a loopback address), then for each client count sends a fixed number of Multi30k
test_2016_flickr sentences, one per request, from that many concurrent ``gradio_client`` clients in this
process.  Reports p50/p95 latency, requests/s, errors, the handler's own time (the app's "time taken"), and
the server's CPU time per request and peak RSS (its decoding worker process included).  (Server and clients in one process would share one
GIL: the clients' polling threads would slow the server's decoding loop.)  The clients use plain http on
loopback with ``ssl_verify=False``, so no call builds a TLS context.  Targets on the 2-core machine with the
shipped model and beam 4: one client p50 <= 150 ms; eight clients: no errors and >= 20 requests/s.
``--engine ctranslate2`` measures the other decoding engine (target: one client p50 <= 70 ms).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

REPO_ROOT = Path(__file__).resolve().parent.parent  # where app.py is

from .recorded import shown_word
from space.page.examples import EXAMPLES
from space.serving.model_store import DEFAULT_MODELS_DIR, SHIPPED
from transformer_hub.training.data import default_data_dir, read_lines

DATA_DIR = default_data_dir()  # $TRANSFORMER_HUB_DATA, else data/multi30k
MAX_REQUESTS = 2000
WARMUP = 2  # requests sent by one client before each measurement
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def test_sentences(n: int, data_dir: Path = DATA_DIR) -> List[str]:
    path = data_dir / "test_2016_flickr.en.gz"
    lines = EXAMPLES["en"]
    if path.is_file():
        lines = [line.strip() for line in read_lines(path)[: max(n, 1)] if line.strip()]
    return [lines[i % len(lines)] for i in range(n)]


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def measure(url: str, model: str, clients: int, requests: int, strategy: str = "beam", beam_size: int = 4,
            warmup: int = 2, engine: str = "pytorch") -> Dict[str, float]:
    """``requests`` calls of /translate spread over ``clients`` concurrent clients."""
    from gradio_client import Client

    if urlsplit(url).hostname not in LOOPBACK:
        raise ValueError(f"the app benchmark only talks to a local app (127.0.0.1), not {url}")
    requests = max(1, min(int(requests), MAX_REQUESTS))
    sentences = test_sentences(requests)
    pool = [Client(url, verbose=False, ssl_verify=False) for _ in range(clients)]  # loopback http: no TLS context to build per call
    args = (model, strategy, beam_size, 0.6, 1.0, 1.0, 0, "en", "de", engine)
    for client in pool[:1]:
        for sentence in sentences[:warmup]:
            client.predict(sentence, *args, api_name="/translate")

    def call(i: int) -> Tuple[float, float]:
        start = time.perf_counter()
        _, ms, _ = pool[i % clients].predict(sentences[i], *args, api_name="/translate")
        return time.perf_counter() - start, float(ms)  # the handler's time includes waiting for a decode slot

    return concurrent_requests(call, clients, requests)


def concurrent_requests(call, clients: int, requests: int, keep_latencies: bool = False) -> Dict:
    """``call(i)`` -> (seconds, handler ms) for requests 0..requests-1 from ``clients`` threads: the row's figures
    (with ``keep_latencies``, every latency in seconds too, to pool rounds).  A failed call is counted, and the
    benchmark goes on."""
    latencies: List[float] = []
    handler_ms: List[float] = []
    errors: List[str] = []

    def one(i: int) -> None:
        try:
            elapsed, ms = call(i)
            latencies.append(elapsed)
            handler_ms.append(ms)
        except Exception as exc:  # noqa: BLE001 - counted, the benchmark goes on
            errors.append(f"{type(exc).__name__}: {exc}")

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as executor:
        list(executor.map(one, range(requests)))
    wall = time.perf_counter() - start
    extra = {"latencies_s": list(latencies)} if keep_latencies else {}
    return {**extra, "clients": clients, "requests": requests, "errors": len(errors), "wall_s": round(wall, 2),
            "requests_per_s": round(len(latencies) / wall, 2),
            "p50_ms": round(1000 * percentile(latencies, 0.5), 1), "p95_ms": round(1000 * percentile(latencies, 0.95), 1),
            "mean_ms": round(1000 * statistics.fmean(latencies), 1) if latencies else float("nan"),
            "handler_p50_ms": round(percentile(handler_ms, 0.5), 1), "first_error": errors[0] if errors else ""}


def measure_rest(url: str, model: str, clients: int, requests: int, warmup: int = 2,
                 engine: str = "pytorch", keep_latencies: bool = False) -> Dict[str, float]:
    """``requests`` calls of the REST ``POST /translate`` (JSON, one keep-alive connection per client); ``url``'s
    path is the routes' prefix (a Serve application's route prefix)."""
    import http.client

    host = urlsplit(url)
    if host.hostname not in LOOPBACK:
        raise ValueError(f"the app benchmark only talks to a local app (127.0.0.1), not {url}")
    requests = max(1, min(int(requests), MAX_REQUESTS))
    sentences = test_sentences(requests)
    local, connections = threading.local(), []  # one keep-alive connection per client thread
    outputs: List[str] = [""] * requests

    def post(i: int) -> Tuple[float, float]:
        body = json.dumps({"q": sentences[i], "source": "en", "target": "de", "model": model, "engine": engine})
        if not hasattr(local, "connection"):
            local.connection = http.client.HTTPConnection(host.hostname, host.port, timeout=120)
            connections.append(local.connection)
        connection = local.connection
        start = time.perf_counter()
        connection.request("POST", host.path.rstrip("/") + "/translate", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = json.loads(response.read())
        elapsed = time.perf_counter() - start
        if response.status != 200 or answer.get("engine") != engine:
            raise RuntimeError(f"HTTP {response.status}: {answer}")
        outputs[i] = answer["translatedText"]
        return elapsed, float(response.headers["Server-Timing"].split("dur=")[1])

    for i in range(min(warmup, requests)):
        post(i)
    row = concurrent_requests(post, clients, requests, keep_latencies)
    for connection in connections:
        connection.close()
    return {**row, "outputs": outputs}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=None, help="model folder or Hub id (default: the shipped en-de)")
    parser.add_argument("--url", default=None, help="benchmark an app already running on 127.0.0.1 instead")
    parser.add_argument("--model-name", default=None, help="with --url: the model name to request")
    parser.add_argument("--clients", default="1,8", help="comma-separated concurrent client counts")
    parser.add_argument("--requests", type=int, default=64, help=f"requests per client count (at most {MAX_REQUESTS})")
    parser.add_argument("--strategy", default="beam", choices=["greedy", "beam"])
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--engine", default="pytorch", choices=["pytorch", "ctranslate2"])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--rest", action="store_true",
                        help="REST POST /translate against the page's /translate, both engines, in one run")


@contextlib.contextmanager
def app_process(model_path: Optional[str], timeout: float = 180.0,
                extra_env: Optional[Dict[str, str]] = None) -> Iterator[Tuple[str, subprocess.Popen]]:
    """``python app.py [--model PATH]`` on a free loopback port (``extra_env``: settings, e.g. ``SPACE_*``); yields
    (url, process) once it answers."""
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "GRADIO_ANALYTICS_ENABLED": "False", **(extra_env or {})}
    command = [sys.executable, str(REPO_ROOT / "app.py")] + (["--model", model_path] if model_path else [])
    log = tempfile.TemporaryFile()  # not a pipe: a chatty server must never block on it
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"app.py exited with code {process.returncode}: "
                                   f"{log.read().decode(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"app.py did not answer on {url} within {timeout:.0f} s")
            time.sleep(0.5)
        yield url, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def process_tree(pid: int) -> List[int]:
    """``pid`` and its descendants (the decoding worker), from /proc (Linux); just ``pid`` elsewhere."""
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                todo.extend(int(child) for child in (task / "children").read_text().split())
        except (OSError, ValueError):
            pass
    return tree


def stat_cpu_s(pid: int, reaped: bool = False) -> Optional[float]:
    """User + system CPU seconds of one process (with ``reaped``: also those of its children it has waited for),
    from /proc/PID/stat (Linux); None where it cannot be read (gone, or no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15 if reaped else 13]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds that a running process and its descendants have used, from /proc (Linux); NaN elsewhere."""
    total = 0.0
    for member in process_tree(pid):
        used = stat_cpu_s(member)
        if used is None and member == pid:
            return float("nan")
        total += used or 0.0
    return total


def process_peak_rss_mb(pid: int) -> float:
    """Summed VmHWM (peak resident set) of a running process and its descendants, from /proc (Linux); NaN elsewhere."""
    peaks = []
    for member in process_tree(pid):
        try:
            peaks += [int(line.split()[1]) / 1024.0 for line in Path(f"/proc/{member}/status").read_text().splitlines()
                      if line.startswith("VmHWM:")]
        except OSError:
            pass
    return sum(peaks) if peaks else float("nan")


def start_server(args: argparse.Namespace,
                 stack: contextlib.ExitStack) -> Tuple[str, str, Optional[subprocess.Popen]]:
    """(url, model name to request, server process or None) for ``--url`` or a fresh ``python app.py``."""
    if args.url:
        return args.url, args.model_name or SHIPPED, None
    if args.model is None and not (DEFAULT_MODELS_DIR / SHIPPED).is_dir():
        raise SystemExit(f"benchmark: error: no shipped model at {DEFAULT_MODELS_DIR / SHIPPED}; pass --model")
    model_path = str(Path(args.model or DEFAULT_MODELS_DIR / SHIPPED).resolve())
    shipped = Path(model_path) == (DEFAULT_MODELS_DIR / SHIPPED).resolve()
    url, server = stack.enter_context(app_process(None if shipped else model_path))
    return url, SHIPPED if shipped else model_path, server


def run(args: argparse.Namespace) -> Dict:
    """The Gradio ``/translate`` measured for each client count (``--rest``: ``rest.run_rest``, see benchmark.py)."""
    with contextlib.ExitStack() as stack:
        url, model, server = start_server(args, stack)
        # one request first, outside every measurement: the decoding worker has started and loaded the model
        measure(url, model, 1, 1, args.strategy, args.beam_size, warmup=0, engine=args.engine)
        rows = []
        for c in (c for c in str(args.clients).split(",") if c.strip()):
            cpu = process_cpu_s(server.pid) if server else float("nan")
            rows.append(measure(url, model, int(c), args.requests, args.strategy, args.beam_size, warmup=WARMUP,
                                engine=args.engine))
            sent = rows[-1]["requests"] + WARMUP
            rows[-1]["server_cpu_ms_per_request"] = round(1000 * (process_cpu_s(server.pid) - cpu) / sent, 1) \
                if server else float("nan")
            rows[-1]["server_peak_rss_mb"] = round(process_peak_rss_mb(server.pid), 1) if server else float("nan")
    given = getattr(args, "argv", sys.argv[1:])[1:]  # a results file names the repository's folders, no machine's
    words = [shlex.quote(shown_word(word)) for word in given]
    report = {"benchmark": "app /translate", "command": " ".join(["python -m benchmarks app", *words]),
              "model": shown_word(model), "strategy": args.strategy, "beam_size": args.beam_size,
              "engine": args.engine, "results": rows}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"app /translate · model {model} · {args.strategy}" + (f" {args.beam_size}" if args.strategy == "beam" else ""))
        print(f"{'clients':>7} {'requests':>8} {'errors':>6} {'req/s':>7} {'p50 ms':>8} {'p95 ms':>8} "
              f"{'handler p50 ms':>14} {'server CPU ms/req':>17} {'server peak RSS MB':>18}")
        for r in rows:
            print(f"{r['clients']:>7} {r['requests']:>8} {r['errors']:>6} {r['requests_per_s']:>7} {r['p50_ms']:>8} "
                  f"{r['p95_ms']:>8} {r['handler_p50_ms']:>14} {r['server_cpu_ms_per_request']:>17} "
                  f"{r['server_peak_rss_mb']:>18}")
            if r["first_error"]:
                print(f"        first error: {r['first_error']}")
    return report

