"""The REST half of ``python -m benchmarks scale``: ``POST /translate`` (one Multi30k sentence per request, en->de,
beam 4, engine pytorch) from ``--clients`` concurrent clients against ``python app.py``'s REST routes and
against ``space/scale.py``'s Serve deployment with 1 and with 2 replicas, in ``--rounds`` interleaved rounds.

The two Serve applications live on one local cluster of 2 CPUs, side by side (route prefixes ``/one`` and
``/two``; their replicas ask for half a CPU each so that all three fit; each decodes on one thread, as deployed),
and ``app.py`` runs beside them, so that the rounds can alternate without restarting anything.  Reported per row:
requests/s (all rounds' requests over their summed wall time), p50/p95 latency (all rounds pooled), errors, the
share of a core that Serve's HTTP proxy (its ``ProxyActor`` process) used while the row was measured, and whether
the answers equal app.py's.  Then, under the same load on ``/two``, one replica's actor process is killed
(SIGKILL) once a quarter of the requests are answered: each client retries a request on a retryable error (an
HTTP 5xx or a dropped connection, up to ``ATTEMPTS`` tries); counted are those errors, the requests lost (never
answered), and how long Serve took to have two replicas again.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional
from urllib.parse import urlsplit

from .app import WARMUP, app_process, concurrent_requests, free_port, measure_rest, percentile, process_tree, \
    stat_cpu_s, test_sentences

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "space" / "models"
APPS = {"one": 1, "two": 2}  # Serve application (route prefix) -> replicas
ATTEMPTS = 4
RETRYABLE = (ConnectionError, http.client.HTTPException, TimeoutError)


def cpu_s(pids: List[int]) -> float:
    """User + system CPU seconds the live processes ``pids`` have used (Linux /proc)."""
    return sum(stat_cpu_s(pid) or 0.0 for pid in pids)


def titled(title: bytes) -> List[int]:
    """This process's descendants whose title starts with ``title`` (Ray titles its workers ``ray::Class``)."""
    found = []
    for pid in process_tree(os.getpid()):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(title):
                found.append(pid)
        except OSError:
            pass
    return found


def replicas_of(app: str) -> List[int]:
    return titled(f"ray::ServeReplica:{app}:rest".encode())


def start_serve(serve) -> str:
    """Both applications deployed on a free port; the proxy's base URL."""
    from space.scale import deployment

    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    for app, replicas in APPS.items():
        serve.run(deployment(replicas).options(ray_actor_options={"num_cpus": 0.5}).bind(models_dir=str(MODELS)),
                  name=app, route_prefix=f"/{app}")
    return f"http://127.0.0.1:{port}/"


def machine_busy_s() -> float:
    """CPU seconds every process of the machine has used (user + nice + system, /proc/stat)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    return sum(int(x) for x in fields[:3]) / os.sysconf("SC_CLK_TCK")


def cpu_groups(app: Optional[str]) -> Dict[str, List[int]]:
    """Where a Serve cell's CPU goes: the proxy, the replicas' actor processes, their decoding workers (their
    children), and this process (the clients' threads and Ray's driver)."""
    groups = {"proxy": titled(b"ray::ProxyActor"), "clients": [os.getpid()]}
    if app is not None:
        replicas = replicas_of(app)
        groups["replicas"] = replicas
        groups["decoding workers"] = [p for r in replicas for p in process_tree(r) if p != r]
    return groups


def cell(url: str, args: argparse.Namespace, app: Optional[str] = None) -> Dict:
    """One measurement of ``url`` (Serve's application ``app``, or None) with the share of a core each group of
    ``cpu_groups`` used over it, and what the machine's other processes used (Ray's own, anything else)."""
    groups = cpu_groups(app)
    before = {name: cpu_s(pids) for name, pids in groups.items()}
    busy_before, start = machine_busy_s(), time.perf_counter()
    row = measure_rest(url, "en-de", args.clients, args.requests, warmup=WARMUP, keep_latencies=True)
    row["measured_s"] = time.perf_counter() - start
    used = {name: cpu_s(pids) - before[name] for name, pids in groups.items()}
    used["everything else"] = machine_busy_s() - busy_before - sum(used.values())
    row["cpu_s"] = used
    return row


def pooled(name: str, replicas: Optional[int], rows: List[Dict], reference: List[str]) -> Dict:
    """One row from a server's rounds: requests over summed wall time, latencies pooled."""
    latencies = [x for r in rows for x in r["latencies_s"]]
    wall = sum(r["wall_s"] for r in rows)
    answered = sum(r["requests"] - r["errors"] for r in rows)
    measured = sum(r["measured_s"] for r in rows)
    shares = {name: sum(r["cpu_s"][name] for r in rows) / measured for name in rows[0]["cpu_s"]}
    cores = {name: round(share, 2) for name, share in shares.items()}
    return {"server": name, "replicas": replicas, "requests": sum(r["requests"] for r in rows),
            "errors": sum(r["errors"] for r in rows), "requests_per_s": round(answered / wall, 2),
            "rounds_requests_per_s": [r["requests_per_s"] for r in rows],
            "p50_ms": round(1000 * percentile(latencies, 0.5), 1),
            "p95_ms": round(1000 * percentile(latencies, 0.95), 1),
            "proxy_core_share": round(shares["proxy"], 2) if replicas else None,
            "cores_used": cores if replicas else None,
            "identical_to_app": all(r["outputs"] == reference for r in rows)}


def bench_rest(args: argparse.Namespace) -> Dict:
    import ray
    from ray import serve

    from transformer_hub.scale import start_cluster

    with app_process(None) as (app_url, _):
        start_cluster(ray, cpus=2)
        try:
            start = time.perf_counter()
            base = start_serve(serve)
            serve_start_s = time.perf_counter() - start
            urls = {"app.py": app_url, "one": base + "one/", "two": base + "two/"}
            for url in urls.values():  # every replica's decoding worker has the model before the timing
                measure_rest(url, "en-de", args.clients, 4 * args.clients, warmup=0)
            cells: Dict[str, List[Dict]] = {name: [] for name in urls}
            for r in range(args.rounds):
                for name in (list(urls) if r % 2 == 0 else list(urls)[::-1]):
                    cells[name].append(cell(urls[name], args, None if name == "app.py" else name))
            reference = cells["app.py"][0]["outputs"]
            kill = kill_replica(urls["two"], args.clients, args.requests, reference)
        finally:
            serve.shutdown()
            ray.shutdown()
    rows = [pooled("app.py", None, cells["app.py"], reference)]
    rows += [pooled("serve", APPS[app], cells[app], reference) for app in APPS]
    speedup = rows[2]["requests_per_s"] / rows[1]["requests_per_s"]
    return {"clients": args.clients, "requests": args.requests, "rounds": args.rounds,
            "serve_start_s": round(serve_start_s, 2), "results": rows, "speedup_2_over_1": round(speedup, 2),
            "efficiency": round(speedup / 2, 2),
            "one_replica_over_app": round(rows[1]["requests_per_s"] / rows[0]["requests_per_s"], 2),
            "replica_kill": kill, "batching": batching_cost(args.clients, args.requests, args.rounds)}


def batching_cost(clients: int, sentences: int, rounds: int) -> Dict:
    """What merging requests is worth to one decoding process (one thread, as a replica's worker): milliseconds
    a sentence when the REST's en-de decode (beam 4, length penalty 0.6) takes ``clients`` sentences at once (one
    server's batches under ``clients`` clients) and half as many (each of two replicas' share), rounds
    interleaved."""
    import torch

    from transformer_hub import Transformer
    from transformer_hub.decoding import DecodingConfig, generate

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = Transformer.from_pretrained(str(MODELS / "en-de")).eval()
        config = DecodingConfig(strategy="beam", beam_size=4, length_penalty=0.6)
        texts = test_sentences(sentences)
        sizes = [clients, max(1, clients // 2)]
        seconds = {size: 0.0 for size in sizes}
        for r in range(rounds):
            for size in (sizes if r % 2 == 0 else sizes[::-1]):
                start = time.perf_counter()
                for first in range(0, len(texts), size):
                    generate(model, texts[first:first + size], config, src_lang="en", tgt_lang="de")
                seconds[size] += time.perf_counter() - start
    finally:
        torch.set_num_threads(threads)
    per = {size: 1000 * took / (rounds * len(texts)) for size, took in seconds.items()}
    return {"sentences": len(texts), "rounds": rounds,
            "ms_per_sentence": {str(size): round(ms, 2) for size, ms in per.items()},
            "half_over_full": round(per[sizes[1]] / per[sizes[0]], 2)}


def kill_replica(url: str, clients: int, requests: int, reference: List[str]) -> Dict:
    """``requests`` requests to ``url`` from ``clients`` retrying clients; one replica SIGKILLed mid-load."""
    sentences = test_sentences(requests)
    lock, answered, retryable, wrong = threading.Lock(), [0], [], []
    victims = replicas_of("two")
    killed, killed_at = threading.Event(), [0.0]
    port = urlsplit(url).port

    def post(i: int):
        body = json.dumps({"q": sentences[i], "source": "en", "target": "de", "model": "en-de", "engine": "pytorch"})
        start = time.perf_counter()
        for attempt in range(ATTEMPTS):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            try:
                connection.request("POST", "/two/translate", body, {"Content-Type": "application/json"})
                response = connection.getresponse()
                payload = response.read()
            except RETRYABLE as exc:
                outcome = f"{type(exc).__name__}"
            else:
                if response.status == 200:
                    break
                if response.status < 500:  # a 4xx is the request's fault: not retried, the request is lost
                    raise RuntimeError(f"HTTP {response.status}: {payload[:200]!r}")
                outcome = f"HTTP {response.status}"
            finally:
                connection.close()
            with lock:
                retryable.append({"request": i, "attempt": attempt + 1, "error": outcome})
            time.sleep(0.5 * (attempt + 1))
        else:
            raise RuntimeError(f"request {i}: no answer in {ATTEMPTS} attempts")
        text = json.loads(payload)["translatedText"]
        with lock:
            answered[0] += 1
            if text != reference[i]:
                wrong.append(i)
            if answered[0] >= requests // 4 and not killed.is_set():
                killed.set()
                os.kill(victims[0], signal.SIGKILL)
                killed_at[0] = time.monotonic()
        return time.perf_counter() - start, 0.0

    row = concurrent_requests(post, clients, requests, keep_latencies=True)
    back_s = None
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # Serve starts a new replica in the dead one's place
        now = replicas_of("two")
        if len(now) == 2 and victims[0] not in now:
            back_s = round(time.monotonic() - killed_at[0], 1)
            break
        time.sleep(0.5)
    return {"clients": clients, "requests": requests, "killed_after_answers": requests // 4,
            "killed": killed.is_set(), "lost": row["errors"], "first_lost": row["first_error"],
            "retryable_errors": len(retryable), "requests_retried": len({e["request"] for e in retryable}),
            "retryable_kinds": sorted({e["error"] for e in retryable}), "max_attempts": ATTEMPTS,
            "answers_not_equal_to_app": len(wrong), "requests_per_s": row["requests_per_s"],
            "p95_ms": row["p95_ms"], "replicas_back_after_s": back_s}


def print_rest(rest: Dict) -> None:
    print(f"REST /translate: {rest['clients']} clients, {rest['requests']} requests per cell, {rest['rounds']} "
          f"rounds; Serve's start {rest['serve_start_s']} s (not counted)")
    for r in rest["results"]:
        name = "app.py" if r["server"] == "app.py" else f"serve, {r['replicas']} replica(s)"
        proxy = r["proxy_core_share"] if r["proxy_core_share"] is not None else "-"
        print(f"  {name:<20} {r['requests_per_s']:>7} req/s  p50 {r['p50_ms']:>7} ms  p95 {r['p95_ms']:>7} ms  "
              f"errors {r['errors']}  proxy {proxy} of a core  answers as app.py's: {r['identical_to_app']}")
        if r["cores_used"]:
            print("    cores used: " + ", ".join(f"{name} {share:.2f}" for name, share in r["cores_used"].items()))
    print(f"  2 replicas / 1 replica: {rest['speedup_2_over_1']}x (target >= 1.4); 1 replica / app.py: "
          f"{rest['one_replica_over_app']}x")
    b = rest["batching"]
    full, half = list(b["ms_per_sentence"].items())
    print(f"  one decoding process, en-de beam 4: {full[1]} ms a sentence {full[0]} at a time, {half[1]} ms "
          f"{half[0]} at a time ({b['half_over_full']}x)")
    k = rest["replica_kill"]
    print(f"  one of 2 replicas killed after {k['killed_after_answers']} of {k['requests']} answers: lost {k['lost']}, "
          f"retryable errors {k['retryable_errors']} ({', '.join(k['retryable_kinds']) or 'none'}) on "
          f"{k['requests_retried']} requests; two replicas again after {k['replicas_back_after_s']} s")
