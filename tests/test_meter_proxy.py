"""The metering proxy as a real process in front of real upstreams: what reaches the client is
what the upstream sent, counts land on the right trial, faults come on schedule, HTTPS works."""

from __future__ import annotations

import datetime
import errno
import http.client
import ipaddress
import json
import os
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pytest_agentbench.meter import client
from pytest_agentbench.meter.client import MeterError, MeterProcess
from pytest_agentbench.meter.records import FAILURE_HEADER
from pytest_agentbench.meter.server import RESPONSE_LIMIT, Relayed
from pytest_agentbench.testing.model_server import ScriptedModelServer

CHAT_TOOLS = [{"type": "function", "function": {"name": "bash"}}]
MESSAGES_TOOLS = [{"name": "Bash"}]
USAGE = {"input": 1000, "cached_input": 600, "output": 40, "reasoning": 8}
SECRET = "sk-test-never-stored"


def post(
    base_url: str, tail: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, bytes, http.client.HTTPResponse]:
    parts = urlsplit(base_url)
    """POST through the meter; a body cut off mid-stream reads as status 0."""
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        conn.request(
            "POST",
            parts.path + tail,
            json.dumps(body),
            {
                "content-type": "application/json",
                "authorization": f"Bearer {SECRET}",
                **(headers or {}),
            },
        )
        response = conn.getresponse()
        try:
            data = response.read()
        except http.client.IncompleteRead:
            return 0, b"", response
        return response.status, data, response
    finally:
        conn.close()


@pytest.fixture
def meter() -> Iterator[MeterProcess]:
    process = MeterProcess(max_seconds=300)
    yield process
    process.stop()


class Recorded:
    """An upstream that sends fixed bytes in chunks, and keeps what it was sent."""

    def __init__(self, body: bytes, content_type: str, chunks: int = 1) -> None:
        self.body, self.content_type, self.chunks = body, content_type, chunks
        self.seen: list[tuple[str, dict[str, str], bytes]] = []
        recorded = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                recorded.seen.append(
                    (self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
                )
                self.send_response(200)
                self.send_header("content-type", recorded.content_type)
                self.send_header("connection", "close")
                if "event-stream" not in recorded.content_type:
                    self.send_header("content-length", str(len(recorded.body)))
                self.end_headers()
                step = max(1, len(recorded.body) // recorded.chunks)
                for start in range(0, len(recorded.body), step):
                    self.wfile.write(recorded.body[start : start + step])
                    self.wfile.flush()
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_streamed_and_plain_bodies_arrive_byte_identical(meter: MeterProcess) -> None:
    events = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 7, "output_tokens": 1}}},
        {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "é\u2028"}},
        {"type": "message_delta", "usage": {"output_tokens": 5}},
    ]
    stream = (
        b"".join(f"event: {e['type']}\r\ndata: {json.dumps(e)}\r\n\r\n".encode() for e in events)
        + b": trailing comment"
    )
    plain = json.dumps({"usage": {"input_tokens": 3, "output_tokens": 2}}, indent=3).encode()
    for body, kind in ((stream, "text/event-stream"), (plain, "application/json")):
        upstream = Recorded(body, kind, chunks=5)
        try:
            token, base = meter.open_trial(upstream.url)
            status, received, _ = post(base, "/v1/messages?beta=true", {"stream": True})
            assert (status, received) == (200, body)
            assert upstream.seen[0][0] == "/v1/messages?beta=true"
            assert upstream.seen[0][1]["authorization"] == f"Bearer {SECRET}"
        finally:
            upstream.close()
    counted = meter.close_trial(token)
    assert counted["tokens"] == {
        "input": 3,
        "cached_input": 0,
        "cache_write": 0,
        "output": 2,
        "reasoning": None,
    }


def test_unknown_prefix_is_404_and_closed_trials_stop_answering(meter: MeterProcess) -> None:
    with ScriptedModelServer({"turns": [{"message": "done"}]}) as server:
        status, _, _ = post(f"{meter.root}/t/nobody", "/chat/completions", {})
        assert status == 404
        assert post(f"{meter.root}", "/v1/chat/completions", {})[0] == 404
        token, base = meter.open_trial(server.openai_base_url)
        meter.close_trial(token)
        assert post(base, "/chat/completions", {"tools": CHAT_TOOLS})[0] == 404
        assert server.requests == []


def test_chat_stream_is_opted_into_usage_and_the_client_does_not_see_it(
    meter: MeterProcess,
) -> None:
    with ScriptedModelServer({"usage": USAGE, "turns": [{"message": "a"}, {"message": "b"}]}) as s:
        token, base = meter.open_trial(s.openai_base_url)
        _, unasked, _ = post(base, "/chat/completions", {"stream": True, "tools": CHAT_TOOLS})
        asked = {"stream": True, "tools": CHAT_TOOLS, "stream_options": {"include_usage": True}}
        _, wanted, _ = post(base, "/chat/completions", asked)
        assert s.requests[0].body["stream_options"] == {"include_usage": True}
        assert b'"usage"' not in unasked and unasked.endswith(b"data: [DONE]\n\n")
        assert b'"usage"' in wanted
        counted = meter.close_trial(token)
    assert counted["requests"] == 2
    assert counted["tokens"] == {
        "input": 2000,
        "cached_input": 1200,
        "cache_write": None,
        "output": 80,
        "reasoning": 16,
    }


def test_side_requests_are_counted_apart(meter: MeterProcess) -> None:
    with ScriptedModelServer({"usage": USAGE, "turns": [{"message": "done"}]}) as s:
        token, base = meter.open_trial(s.base_url)
        post(base, "/v1/messages", {"stream": True, "messages": []})  # a title: no tools
        post(base, "/v1/messages", {"stream": True, "tools": MESSAGES_TOOLS})
        counted = meter.close_trial(token)
        assert counted["tokens"]["input"] == sum(r.usage["input"] for r in s.requests if r.usage)
        assert counted["side_tokens"]["input"] == s.script.side_usage.input
        assert counted["tokens"]["output"] == USAGE["output"] + s.script.side_usage.output


def test_concurrent_trials_are_attributed_to_their_own_counters(meter: MeterProcess) -> None:
    usage_a = {"input": 100, "cached_input": 0, "output": 10, "reasoning": 0}
    usage_b = {"input": 5000, "cached_input": 4000, "output": 300, "reasoning": 100}
    servers = [
        ScriptedModelServer({"usage": u, "turns": [{"message": "x"}] * 6}).start()
        for u in (usage_a, usage_b)
    ]
    trials = [meter.open_trial(s.openai_base_url) for s in servers]
    barrier = threading.Barrier(2)

    def drive(base: str) -> None:
        barrier.wait()
        for _ in range(6):
            post(base, "/responses", {"stream": True, "tools": [{"name": "exec_command"}]})

    threads = [threading.Thread(target=drive, args=(base,)) for _, base in trials]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for server in servers:
        server.stop()
    counted = [meter.close_trial(token) for token, _ in trials]
    assert [c["requests"] for c in counted] == [6, 6]
    assert counted[0]["tokens"]["input"] == 600 and counted[1]["tokens"]["input"] == 30000
    assert counted[1]["tokens"]["reasoning"] == 600


def test_faults_follow_the_schedule_and_never_reach_upstream(meter: MeterProcess) -> None:
    with ScriptedModelServer({"turns": [{"message": "x"}] * 9}) as s:
        token, base = meter.open_trial(s.openai_base_url, faults="every:2:500,4:429,5:drop")
        statuses = []
        for _ in range(6):
            status, _body, response = post(base, "/chat/completions", {"stream": True})
            statuses.append(status)
            if status == 429:
                assert response.getheader("retry-after") == "0"
        counted = meter.close_trial(token)
    assert statuses == [200, 500, 200, 429, 0, 500]
    assert [r["injected"] for r in counted["log"]] == [None, "500", None, "429", "drop", "500"]
    assert (counted["faults"], counted["retried_after_fault"]) == (4, False)
    assert len(s.requests) == 2  # requests 1 and 3; the drop at 5 answers from the meter
    assert counted["statuses"] == {"200": 3, "500": 2, "429": 1}


def test_a_cap_lets_through_only_the_first_requests_with_tools(meter: MeterProcess) -> None:
    """A warm arm's priming run: one model request with tools reaches the upstream; a side
    request (no tools) still does; the next step is refused 400 by the meter, recorded as
    injected "cap" and not counted as a fault."""
    with ScriptedModelServer({"usage": USAGE, "turns": [{"message": "x"}] * 4}) as s:
        token, base = meter.open_trial(s.openai_base_url, cap=1)
        tools = {"stream": True, "tools": [{"name": "exec_command"}]}
        first, _, _ = post(base, "/responses", tools)
        side, _, _ = post(base, "/responses", {"stream": True})
        refused, body, _ = post(base, "/responses", tools)
        counted = meter.close_trial(token)
    assert (first, side, refused) == (200, 200, 400)
    assert b"priming run" in body
    assert [r["injected"] for r in counted["log"]] == [None, None, "cap"]
    assert len(s.requests) == 2  # the refused step never reached the upstream
    assert counted["faults"] == 0 and counted["retried_after_fault"] is None
    assert counted["tokens"]["input"] == USAGE["input"] + s.script.side_usage.input


def test_upstream_errors_are_recorded_and_unmeasured(meter: MeterProcess) -> None:
    with ScriptedModelServer({"turns": [{"fault": 401}]}) as s:
        token, base = meter.open_trial(s.openai_base_url)
        assert post(base, "/responses", {"tools": [{"name": "exec_command"}]})[0] == 401
        counted = meter.close_trial(token)
    assert counted["statuses"] == {"401": 1}
    assert counted["tokens"] is None and counted["log"][0]["injected"] is None


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("upstream", "failure"),
    [
        ("http://127.0.0.1:{closed}/v1", "upstream_unreachable"),
        ("http://agentbench-no-such-host.invalid/v1", "dns_failure"),
    ],
)
def test_the_meters_own_gateway_error_says_why_on_the_wire_and_in_the_record(
    meter: MeterProcess, upstream: str, failure: str
) -> None:
    # the closed port is chosen when the test runs: xdist workers must collect the same ids
    token, base = meter.open_trial(upstream.format(closed=closed_port()))
    status, body, response = post(base, "/responses", {"tools": [{"name": "exec_command"}]})
    counted = meter.close_trial(token)
    assert status == 502 and b"meter: upstream unreachable" in body
    assert response.getheader(FAILURE_HEADER) == failure
    assert counted["log"][0]["failure"] == failure and counted["statuses"] == {"none": 1}


def test_an_upstream_502_is_the_upstreams_and_carries_no_failure(meter: MeterProcess) -> None:
    with ScriptedModelServer({"turns": [{"fault": 502}]}) as s:
        token, base = meter.open_trial(s.openai_base_url)
        status, _, response = post(base, "/responses", {"tools": [{"name": "exec_command"}]})
        counted = meter.close_trial(token)
    assert status == 502 and response.getheader(FAILURE_HEADER) is None
    assert counted["log"][0]["failure"] is None and counted["statuses"] == {"502": 1}


def test_an_upstream_that_cuts_its_answer_short_is_a_connection_reset(
    meter: MeterProcess,
) -> None:
    class Cut(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "1000")  # promised, never sent in full
            self.end_headers()
            self.wfile.write(b'{"partial"')
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Cut)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        token, base = meter.open_trial(f"http://127.0.0.1:{httpd.server_address[1]}/v1")
        status, _, _ = post(base, "/responses", {"tools": [{"name": "exec_command"}]})
        counted = meter.close_trial(token)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert status == 0  # the client's answer is cut off too
    assert counted["log"][0]["failure"] == "connection_reset"


def test_bodies_are_not_kept_without_a_log(tmp_path: Path) -> None:
    log = tmp_path / "meter.jsonl"
    process = MeterProcess(log=log, max_seconds=60)
    try:
        with ScriptedModelServer({"turns": [{"message": "x"}]}) as s:
            token, base = process.open_trial(s.openai_base_url)
            post(base, "/chat/completions", {"stream": True, "messages": ["hello"]})
    finally:
        process.stop()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines == [
        {
            "trial": token,
            "index": 1,
            "path": "/chat/completions",
            "request": {"stream": True, "messages": ["hello"]},
        }
    ]
    assert SECRET not in log.read_text()


def test_a_bodies_file_keeps_each_request_as_sent_and_its_response_as_relayed(
    meter: MeterProcess, tmp_path: Path
) -> None:
    bodies = tmp_path / "wire.jsonl"
    with ScriptedModelServer({"usage": USAGE, "turns": [{"message": "x"}]}) as s:
        token, base = meter.open_trial(s.openai_base_url, faults="2:429", bodies=bodies)
        sent = {"stream": True, "tools": CHAT_TOOLS}
        _, received, _ = post(base, "/chat/completions", sent)
        _, refused, _ = post(base, "/chat/completions", sent)
        log = meter.close_trial(token)["log"]
    first, second = [json.loads(line) for line in bodies.read_text().splitlines()]
    assert first["request"] == sent  # not the usage opt-in the upstream got
    assert first["response"] == received.decode() and first["cut"] is False
    assert first["usage"] == {**USAGE, "cache_write": None}
    assert 0 < first["latency_s"] <= first["duration_s"]
    assert {k: first[k] for k in log[0]} == log[0]
    assert (second["injected"], second["status"], second["duration_s"]) == ("429", 429, None)
    assert second["response"] == refused.decode()
    assert SECRET not in bodies.read_text()


def test_a_kept_response_is_cut_at_the_limit() -> None:
    relayed = Relayed()
    relayed.add(b"x" * (RESPONSE_LIMIT - 1))
    assert not relayed.cut
    relayed.add(b"yz")
    assert relayed.cut and relayed.text().endswith("xy") and len(relayed.kept) == RESPONSE_LIMIT


def test_meter_exits_when_its_parent_lets_go() -> None:
    process = MeterProcess(max_seconds=60)
    process.stop()
    assert process._proc.returncode == 0
    with pytest.raises(OSError):
        http.client.HTTPConnection("127.0.0.1", process.port, timeout=5).request("GET", "/")


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (cert.pem, key.pem), valid for an hour."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "agentbench test upstream")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@pytest.mark.parametrize("trusted", [True, False])
def test_https_upstream_with_a_trusted_certificate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trusted: bool
) -> None:
    cert_file, key_file = make_certificate(tmp_path)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert_file, key_file)
    if trusted:
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
    process = MeterProcess(max_seconds=60)
    try:
        with ScriptedModelServer({"usage": USAGE, "turns": [{"message": "x"}]}, tls=tls) as s:
            assert s.base_url.startswith("https://")
            token, base = process.open_trial(s.openai_base_url)
            status, body, _ = post(base, "/responses", {"stream": True, "tools": [{"n": 1}]})
            counted = process.close_trial(token)
    finally:
        process.stop()
    if trusted:
        assert status == 200 and b"response.completed" in body
        assert counted["tokens"]["input"] == USAGE["input"]
    else:  # an upstream the meter cannot verify is a gateway error, never a silent bypass
        assert status == 502 and b"certificate" in body
        assert counted["statuses"] == {"none": 1}


def test_meter_start_is_bounded() -> None:
    started = time.monotonic()
    process = MeterProcess(max_seconds=1)
    process._proc.wait(timeout=30)
    assert process._proc.returncode == 0 and time.monotonic() - started < 30
    process.stop()


def test_a_hang_holds_the_request_and_does_not_hold_up_the_stop() -> None:
    process = MeterProcess(max_seconds=60)
    with ScriptedModelServer({"turns": []}) as server:
        token, _ = process.open_trial(server.openai_base_url, faults="1:hang")
        conn = http.client.HTTPConnection("127.0.0.1", process.port, timeout=1)
        try:
            conn.request("POST", f"/t/{token}/chat/completions", "{}")
            with pytest.raises(TimeoutError):
                conn.getresponse()
        finally:
            conn.close()
        (record,) = process.counters(token)["log"]
        process.stop()
    assert (record["injected"], record["status"]) == ("hang", None)
    assert server.requests == []
    assert process._proc.returncode == 0  # a clean exit, not the kill after stop's wait


def refusing_popen(monkeypatch: pytest.MonkeyPatch, refusals: list[int]) -> list[list[str]]:
    """subprocess.Popen as the meter client sees it: each errno in refusals refuses one start,
    in order, before the real Popen runs; returns the argv of every attempt."""
    real = subprocess.Popen
    attempts: list[list[str]] = []

    def popen(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        attempts.append(argv)
        if refusals:
            code = refusals.pop(0)
            raise OSError(code, os.strerror(code), argv[0])
        return real(argv, **kwargs)

    monkeypatch.setattr(client.subprocess, "Popen", popen)
    monkeypatch.setattr(client, "SPAWN_PAUSES", (0.0,) * 5)
    return attempts


def test_a_transient_refusal_to_start_the_proxy_is_outlasted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    attempts = refusing_popen(monkeypatch, [errno.ENOMEM, errno.EAGAIN])
    meter = MeterProcess(max_seconds=30)
    try:
        assert len(attempts) == 3
        assert meter.open_trial("http://127.0.0.1:9")[1].startswith(meter.root + "/t/")
    finally:
        meter.stop()


@pytest.mark.parametrize(
    ("interpreter", "refusals", "tries"),
    [
        (None, [errno.ENOMEM] * 6, 6),  # a refusal that outlasts every pause
        (None, [errno.ENOENT] * 6, 6),  # any errno while the interpreter is there
        ("/nonexistent/python3", [errno.ENOENT], 1),  # no pause brings an interpreter back
    ],
)
def test_a_lasting_refusal_to_start_the_proxy_is_a_meter_error(
    monkeypatch: pytest.MonkeyPatch, interpreter: str | None, refusals: list[int], tries: int
) -> None:
    if interpreter is not None:
        monkeypatch.setattr(client.sys, "executable", interpreter)
    attempts = refusing_popen(monkeypatch, refusals)
    name = errno.errorcode[refusals[0]]
    with pytest.raises(
        MeterError, match=rf"could not be started \({tries} tries\): {name}, "
    ) as info:
        MeterProcess(max_seconds=30)
    assert len(attempts) == tries
    assert info.value.__suppress_context__  # the report opens with the errno, not Popen's code
