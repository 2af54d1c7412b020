"""The parts of ``python -m benchmarks scale`` that decide its figures, without Ray: the interleaved order of the
rows, the REST client's route prefix and latencies, and how a row's rounds are pooled."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from benchmarks.app import concurrent_requests, measure_rest
from benchmarks.scale import interleaved
from benchmarks.scale_rest import pooled


def test_the_rows_alternate_their_order_round_by_round():
    assert list(interleaved(["cli", "ray1", "ray2"], 3)) == [
        (0, "cli"), (0, "ray1"), (0, "ray2"), (1, "ray2"), (1, "ray1"), (1, "cli"),
        (2, "cli"), (2, "ray1"), (2, "ray2")]


def test_concurrent_requests_keeps_every_latency_and_counts_failures():
    def call(i):
        if i == 3:
            raise ConnectionResetError("gone")
        return 0.01 * (i + 1), 1.0

    row = concurrent_requests(call, 2, 5, keep_latencies=True)
    assert sorted(row["latencies_s"]) == pytest.approx([0.01, 0.02, 0.03, 0.05])
    assert row["errors"] == 1 and row["first_error"] == "ConnectionResetError: gone"
    assert "latencies_s" not in concurrent_requests(call, 2, 2)


class Prefixed(BaseHTTPRequestHandler):
    """Answers POST /one/translate as the REST routes do; anything else is a 404."""

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ok = self.path == "/one/translate"
        answer = {"translatedText": body["q"].upper(), "engine": body["engine"]} if ok else {"error": "Not Found"}
        data = json.dumps(answer).encode()
        self.send_response(200 if ok else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Server-Timing", "handler;dur=1.5")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_measure_rest_posts_under_the_urls_route_prefix(tmp_path, monkeypatch):
    import benchmarks.app as app

    monkeypatch.setattr(app, "test_sentences", lambda n: [f"sentence {i}" for i in range(n)])
    server = ThreadingHTTPServer(("127.0.0.1", 0), Prefixed)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/"
        row = measure_rest(url + "one/", "en-de", 2, 4, warmup=0, keep_latencies=True)
        assert row["errors"] == 0 and row["outputs"] == [f"SENTENCE {i}" for i in range(4)]
        assert len(row["latencies_s"]) == 4
        assert measure_rest(url, "en-de", 1, 2, warmup=0)["errors"] == 2  # no prefix: /translate is a 404 here
    finally:
        server.shutdown()
        server.server_close()


def test_a_servers_rounds_pool_into_one_row():
    rounds = [{"latencies_s": [0.1, 0.2], "wall_s": 1.0, "requests": 2, "errors": 0, "requests_per_s": 2.0,
               "measured_s": 1.0, "outputs": ["a", "b"],
               "cpu_s": {"proxy": 0.1, "decoding workers": 0.9}},
              {"latencies_s": [0.3, 0.4], "wall_s": 3.0, "requests": 3, "errors": 1, "requests_per_s": 0.67,
               "measured_s": 3.0, "outputs": ["a", "b"],
               "cpu_s": {"proxy": 0.5, "decoding workers": 2.7}}]
    row = pooled("serve", 2, rounds, ["a", "b"])
    assert row["requests_per_s"] == pytest.approx(4 / 4.0)  # answered requests over the summed wall time
    assert row["p50_ms"] == pytest.approx(250.0) and row["requests"] == 5 and row["errors"] == 1
    assert row["proxy_core_share"] == pytest.approx(0.15) and row["identical_to_app"]
    assert row["cores_used"] == {"proxy": 0.15, "decoding workers": 0.9}  # CPU seconds over measured seconds
    assert pooled("app.py", None, rounds, ["a", "x"])["proxy_core_share"] is None
    assert not pooled("app.py", None, rounds, ["a", "x"])["identical_to_app"]


def test_two_cli_processes_on_halves_give_the_one_processs_output_in_order(tmp_path):
    from benchmarks.scale import run_cli, run_two_clis

    source = tmp_path / "corpus.txt"
    source.write_text("A dog runs.\nUn chat dort.\nA man reads a book.\nDvě děti si hrají.\nThe sun is out.\n",
                      encoding="utf-8")
    assert run_two_clis(source, tmp_path / "two.txt") > 0 and run_cli(source, tmp_path / "one.txt") > 0
    one = (tmp_path / "one.txt").read_text(encoding="utf-8").splitlines()
    assert (tmp_path / "two.txt").read_text(encoding="utf-8").splitlines() == one and len(one) == 5
