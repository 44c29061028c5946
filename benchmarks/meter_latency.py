"""What the metering proxy adds to a model request, and how fast it relays a long stream.

Subject: a POST through the meter (a process of its own, as in a run) to the scripted model
server. Floor: the same POST straight to the server. Requests alternate, one through the meter
and one direct, so each pair sees the same machine; the figure is the median of the pairs'
differences. Throughput: one Chat Completions stream of several MB, through the meter and
direct (the meter parses every event it passes on).
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from benchmarks.core import Benchmark, Context, Target, check
from pytest_agentbench.meter.client import MeterProcess
from pytest_agentbench.testing.model_server import ScriptedModelServer

SMALL = {"stream": True, "messages": [{"role": "user", "content": "hi"}]}  # a side request
STREAM_TEXT_BYTES = 8 << 20


def post(url: str, body: dict[str, Any]) -> tuple[float, int]:
    """Seconds to the end of the body, and its size."""
    parts = urlsplit(url)
    payload = json.dumps(body)
    started = time.perf_counter()
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    try:
        conn.request("POST", parts.path, payload, {"content-type": "application/json"})
        data = conn.getresponse().read()
    finally:
        conn.close()
    return time.perf_counter() - started, len(data)


def run(ctx: Context) -> list[dict[str, Any]]:
    meter = MeterProcess(max_seconds=600)
    results = []
    try:
        with ScriptedModelServer({"turns": []}) as server:
            token, base = meter.open_trial(server.openai_base_url)
            direct_url = f"{server.openai_base_url}/chat/completions"
            metered_url = f"{base}/chat/completions"
            for _ in range(20):  # warm both paths (connections, imports, caches)
                post(direct_url, SMALL)
                post(metered_url, SMALL)
            direct, metered = [], []
            for _ in range(ctx.runs(400, 60)):
                metered.append(post(metered_url, SMALL)[0] * 1000)
                direct.append(post(direct_url, SMALL)[0] * 1000)
            added = [m - d for m, d in zip(metered, direct, strict=True)]
            results.append(
                check(
                    "meter: added latency per request",
                    unit="ms",
                    value=added,
                    target=Target("value", "<=", 2.0),
                    note=f"direct request median {sorted(direct)[len(direct) // 2]:.2f} ms; "
                    "a streamed Chat Completions side request, loopback",
                )
            )
            meter.close_trial(token)
        stream = _chat_stream(STREAM_TEXT_BYTES)
        with StaticStream(stream) as upstream:
            token, base = meter.open_trial(upstream.url)
            through, straight = [], []
            for _ in range(ctx.runs(7, 2)):
                seconds, size = post(f"{base}/chat/completions", SMALL)
                through.append(size / seconds / 1e6)
                seconds, size = post(f"{upstream.url}/chat/completions", SMALL)
                straight.append(size / seconds / 1e6)
            meter.close_trial(token)
        results.append(
            check(
                f"meter: streamed throughput ({STREAM_TEXT_BYTES >> 20} MB of 1 KB events)",
                unit="MB/s",
                value=through,
                floor=straight,
                paired=True,
                ratio="value/floor",
                floor_is="the same stream straight from the scripted server",
                # A model streams kilobytes a second: the meter must never be what is slow.
                target=Target("value", ">=", 50.0),
            )
        )
    finally:
        meter.stop()
    return results


def _chat_stream(text_bytes: int) -> bytes:
    """A Chat Completions stream: 1 KB content deltas, then a usage chunk and [DONE]."""
    piece = json.dumps({"choices": [{"index": 0, "delta": {"content": "x" * 1024}}]})
    usage = {"prompt_tokens": 10, "completion_tokens": text_bytes // 4}
    events = [f"data: {piece}\n\n"] * (text_bytes // 1024)
    events += [f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n", "data: [DONE]\n\n"]
    return "".join(events).encode()


class StaticStream:
    """An upstream that answers every POST with the same event stream, in 64 KB writes."""

    def __init__(self, body: bytes) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                for start in range(0, len(body), 65536):
                    self.wfile.write(body[start : start + 65536])
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> StaticStream:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


BENCHMARK = Benchmark("meter_latency", "metering proxy: added latency and stream throughput", run)

if __name__ == "__main__":
    from benchmarks.__main__ import main

    sys.exit(main(["--only", BENCHMARK.name, *sys.argv[1:]]))
