"""``python -m benchmarks app --rest``: LibreTranslate's REST ``POST /translate`` against the page's
Gradio ``/translate`` on the same server, in one run, for both engines and each client count.

Every (engine, clients) cell measures the Gradio path and then the REST path back to back, with the same
sentences (Multi30k test_2016_flickr, one per request), so the machine's other load hits both alike.  Beam 4
(the REST routes' beam), the shipped en-de model unless ``--model``.  Reported per row: requests/s, p50/p95
latency, the handler's own time (Gradio's "time taken"; REST's ``Server-Timing`` header), errors, and the
server's CPU per request (its decoding worker included).  Targets: one client, REST p50 <= handler
time + 10 ms and <= 0.6x Gradio's p50; eight clients, REST >= 1.5x Gradio's requests/s with no errors.
"""
from __future__ import annotations

import argparse
import contextlib
import json
from typing import Dict, List

from .app import WARMUP, measure, measure_rest, process_cpu_s, start_server

ENGINES = ("pytorch", "ctranslate2")
PATHS = ("gradio", "rest")


def _cell(url: str, model: str, server, path: str, engine: str, clients: int, requests: int) -> Dict:
    cpu = process_cpu_s(server.pid) if server else float("nan")
    if path == "rest":
        row = measure_rest(url, model, clients, requests, warmup=WARMUP, engine=engine)
    else:
        row = measure(url, model, clients, requests, "beam", 4, warmup=WARMUP, engine=engine)
    row["server_cpu_ms_per_request"] = (round(1000 * (process_cpu_s(server.pid) - cpu) / (requests + WARMUP), 1)
                                        if server else float("nan"))
    return {"path": path, "engine": engine, **row}


def _verdicts(rows: List[Dict]) -> List[str]:
    cell = {(r["path"], r["engine"], r["clients"]): r for r in rows}
    lines = []
    for clients in sorted({r["clients"] for r in rows}):  # the same sentences through both engines
        a, b = cell.get(("rest", "pytorch", clients)), cell.get(("rest", "ctranslate2", clients))
        if a and b and a.get("outputs") and b.get("outputs"):
            same = sum(x == y for x, y in zip(a["outputs"], b["outputs"]))
            lines.append(f"{clients} client(s): beam 4 outputs identical between the engines for {same} of "
                         f"{len(a['outputs'])} sentences")
    for engine in ENGINES:
        for clients in sorted({r["clients"] for r in rows}):
            gradio, rest = cell.get(("gradio", engine, clients)), cell.get(("rest", engine, clients))
            if not gradio or not rest:
                continue
            if clients == 1:
                lines.append(f"{engine}, 1 client: REST p50 {rest['p50_ms']} ms = handler {rest['handler_p50_ms']} ms "
                             f"+ {rest['p50_ms'] - rest['handler_p50_ms']:.1f} ms (target <= +10); "
                             f"{rest['p50_ms'] / gradio['p50_ms']:.2f}x Gradio's p50 {gradio['p50_ms']} ms "
                             "(target <= 0.6x)")
            else:
                lines.append(f"{engine}, {clients} clients: REST {rest['requests_per_s']} req/s = "
                             f"{rest['requests_per_s'] / gradio['requests_per_s']:.2f}x Gradio's "
                             f"{gradio['requests_per_s']} (target >= 1.5x), errors {rest['errors']} + "
                             f"{gradio['errors']}; server CPU/request {rest['server_cpu_ms_per_request']} ms "
                             f"against {gradio['server_cpu_ms_per_request']} ms")
    return lines


def run_rest(args: argparse.Namespace) -> Dict:
    if args.beam_size != 4 or args.strategy != "beam":
        raise SystemExit("benchmark: error: --rest measures beam 4, the REST routes' decoding (drop --beam-size)")
    clients = [int(c) for c in str(args.clients).split(",") if c.strip()]
    with contextlib.ExitStack() as stack:
        url, model, server = start_server(args, stack)
        for engine in ENGINES:  # the worker has loaded the model and converted it, outside every measurement
            measure(url, model, 1, 1, "beam", 4, warmup=0, engine=engine)
            measure_rest(url, model, 1, 1, warmup=0, engine=engine)
        rows = [_cell(url, model, server, path, engine, c, args.requests)
                for engine in ENGINES for c in clients for path in PATHS]
    verdicts = _verdicts(rows)
    for row in rows:
        row.pop("outputs", None)
    report = {"benchmark": "app /translate: REST against Gradio", "model": model, "beam_size": 4, "results": rows,
              "verdicts": verdicts}
    if args.json:
        print(json.dumps(report, indent=2))
        return report
    print(f"REST POST /translate against Gradio /translate · model {model} · beam 4 · "
          f"{args.requests} requests per row")
    print(f"{'path':>6} {'engine':>11} {'clients':>7} {'errors':>6} {'req/s':>7} {'p50 ms':>8} {'p95 ms':>8} "
          f"{'handler p50 ms':>14} {'server CPU ms/req':>17}")
    for r in rows:
        print(f"{r['path']:>6} {r['engine']:>11} {r['clients']:>7} {r['errors']:>6} {r['requests_per_s']:>7} "
              f"{r['p50_ms']:>8} {r['p95_ms']:>8} {r['handler_p50_ms']:>14} {r['server_cpu_ms_per_request']:>17}")
        if r["first_error"]:
            print(f"        first error: {r['first_error']}")
    print("\n".join(report["verdicts"]))
    return report
