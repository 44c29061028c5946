"""The metering proxy: forwards each trial's model requests to its upstream and counts them.

Routes (127.0.0.1; with --listen HOST the trials' routes /t/ alone on HOST too):
  PUT    /_trial/TOKEN   {"upstream": URL, "faults": SPEC, "bodies": PATH, "cap": N}  opens a
                         trial; with cap, the model requests after the first N that carry tools
                         are answered 400 by the meter (injected "cap"): a warm arm's one-step
                         priming run
  GET    /_trial/TOKEN   the trial's counters (JSON)
  DELETE /_trial/TOKEN   the counters, and the trial closes
  *      /t/TOKEN/TAIL   forwarded to UPSTREAM/TAIL; an unknown TOKEN answers 404

Responses are passed through as they arrive: a non-streamed body byte for byte, a stream
chunk by chunk. The one change: a Chat Completions stream that did not ask for usage is asked
for it, and the usage-only chunk it then gets is kept from the client. Headers (credentials
among them) are forwarded and never stored. A trial opened with a bodies file gets one JSON line
there per finished request: its record, the request body as the client sent it and the
response as relayed (the trajectory's wire evidence); the --log file keeps request bodies of
every trial.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import (
    ClientConnectionError,
    ClientConnectorDNSError,
    ClientConnectorError,
    ClientPayloadError,
    ClientSession,
    ClientTimeout,
    TCPConnector,
    web,
)

from pytest_agentbench.meter.counting import (
    CHAT,
    EventSplitter,
    StreamCounter,
    WireUsage,
    body_usage,
    event_data,
    protocol_of,
)
from pytest_agentbench.meter.faults import DROP, HANG, FaultSchedule, parse_faults
from pytest_agentbench.meter.records import (
    CAP,
    CONNECTION_RESET,
    DNS_FAILURE,
    FAILURE_HEADER,
    UPSTREAM_UNREACHABLE,
    summarize,
)

# Hop-by-hop headers (RFC 9110 7.6.1) and those the proxy recomputes.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
        "content-encoding",
    }
)
HANG_SECONDS = 3600.0
RESPONSE_LIMIT = 8 << 20  # bytes of one response kept in a bodies file; the rest is cut


def failure_of(error: BaseException) -> str:
    """The wire cause of a request the upstream never answered: its name lookup failed, its
    connection was refused or cut while connecting, or it dropped the connection after."""
    if isinstance(error, ClientConnectorDNSError):
        return DNS_FAILURE
    if isinstance(error, ClientConnectorError):
        return UPSTREAM_UNREACHABLE
    if isinstance(error, ClientConnectionError | ClientPayloadError | ConnectionResetError):
        return CONNECTION_RESET
    return UPSTREAM_UNREACHABLE


@dataclass
class RequestRecord:
    """One request of a trial as the meter saw it (no bodies, no headers)."""

    index: int
    path: str
    protocol: str | None
    has_tools: bool | None
    status: int | None  # None: no answer (hang, drop before headers, upstream unreachable)
    injected: str | None
    latency_s: float | None  # to the upstream's response headers
    usage: WireUsage | None
    failure: str | None = None  # records.WIRE_FAILURES: the upstream never answered in full
    duration_s: float | None = None  # from sending upstream to the response's last byte

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "path": self.path,
            "protocol": self.protocol,
            "has_tools": self.has_tools,
            "status": self.status,
            "injected": self.injected,
            "latency_s": self.latency_s,
            "usage": self.usage.to_dict() if self.usage else None,
            "failure": self.failure,
            "duration_s": self.duration_s,
        }


class Relayed:
    """The response bytes the client was sent, up to RESPONSE_LIMIT."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.cut = False

    def add(self, data: bytes) -> None:
        room = RESPONSE_LIMIT - len(self.kept)
        self.kept += data[:room]
        self.cut = self.cut or len(data) > room

    def text(self) -> str:
        return self.kept.decode("utf-8", "replace")


@dataclass
class Trial:
    upstream: str
    faults: FaultSchedule
    bodies: Path | None = None  # where each finished request's line goes (module docstring)
    requests: list[RequestRecord] = field(default_factory=list)
    cap: int | None = None  # model requests with tools let through (module docstring)

    def over_cap(self, record: RequestRecord) -> bool:
        """Whether record is a model request with tools past the cap."""
        if self.cap is None or not record.protocol or record.has_tools is False:
            return False
        earlier = [
            r
            for r in self.requests
            if r is not record and r.protocol and r.has_tools is not False and not r.injected
        ]
        return len(earlier) >= self.cap

    def counters(self) -> dict[str, Any]:
        """The trial's summed figures (records.Metered) and its request log."""
        log = [r.to_json() for r in self.requests]
        return {**summarize(log), "log": log}


def _tools_of(body: bytes) -> tuple[Any, bool | None]:
    try:
        data = json.loads(body) if body else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None, None
    if not isinstance(data, dict):
        return data, None
    return data, bool(data.get("tools"))


def _wants_usage_opt_in(protocol: str | None, data: Any) -> bool:
    if protocol != CHAT or not isinstance(data, dict) or data.get("stream") is not True:
        return False
    options = data.get("stream_options")
    return not (isinstance(options, dict) and options.get("include_usage") is True)


class Meter:
    """The proxy's state: open trials and one upstream client session."""

    def __init__(self, log: Path | None = None) -> None:
        self.trials: dict[str, Trial] = {}
        self.log = log
        self.session: ClientSession | None = None

    def app(self, control: bool = True) -> web.Application:
        """The application: with control, the /_trial routes too (loopback only: the harness
        opens trials there); without, the trials' routes alone, for another listening address
        (--agentbench-meter-listen), served beside a control app of the same meter."""
        app = web.Application(client_max_size=1024**3)
        if control:
            app.router.add_route("PUT", "/_trial/{token}", self.open_trial)
            app.router.add_route("GET", "/_trial/{token}", self.read_trial)
            app.router.add_route("DELETE", "/_trial/{token}", self.close_trial)
            app.on_startup.append(self._start_session)
            app.on_cleanup.append(self._close_session)
        app.router.add_route("*", "/t/{token}/{tail:.*}", self.forward)
        return app

    async def _start_session(self, _app: web.Application) -> None:
        # trust_env: SSL_CERT_FILE and the proxy variables apply as in the agent's own client.
        self.session = ClientSession(
            connector=TCPConnector(limit=0),
            timeout=ClientTimeout(total=None, sock_connect=30),
            auto_decompress=False,
            trust_env=True,
        )

    async def _close_session(self, _app: web.Application) -> None:
        if self.session is not None:
            await self.session.close()

    async def open_trial(self, request: web.Request) -> web.Response:
        spec = await request.json()
        upstream = str(spec.get("upstream") or "")
        if not upstream.startswith(("http://", "https://")):
            return web.json_response({"error": f"upstream {upstream!r} is not http(s)"}, status=400)
        try:
            faults = parse_faults(str(spec.get("faults") or ""))
        except ValueError as error:
            return web.json_response({"error": str(error)}, status=400)
        bodies = spec.get("bodies")
        if bodies is not None and not (isinstance(bodies, str) and Path(bodies).is_absolute()):
            return web.json_response({"error": f"bodies {bodies!r} is not a path"}, status=400)
        cap = spec.get("cap")
        if cap is not None and not (isinstance(cap, int) and cap >= 1):
            return web.json_response({"error": f"cap {cap!r} is not a count"}, status=400)
        self.trials[request.match_info["token"]] = Trial(
            upstream.rstrip("/"), faults, Path(bodies) if bodies else None, cap=cap
        )
        return web.json_response({"ok": True})

    async def read_trial(self, request: web.Request) -> web.Response:
        trial = self.trials.get(request.match_info["token"])
        if trial is None:
            raise web.HTTPNotFound()
        return web.json_response(trial.counters())

    async def close_trial(self, request: web.Request) -> web.Response:
        trial = self.trials.pop(request.match_info["token"], None)
        if trial is None:
            raise web.HTTPNotFound()
        return web.json_response(trial.counters())

    async def forward(self, request: web.Request) -> web.StreamResponse:
        token = request.match_info["token"]
        trial = self.trials.get(token)
        if trial is None:
            raise web.HTTPNotFound(text="no live trial under this prefix\n")
        tail = request.match_info["tail"]
        body = await request.read()
        data, has_tools = _tools_of(body)
        protocol = protocol_of("/" + tail)
        record = RequestRecord(
            len(trial.requests) + 1, "/" + tail, protocol, has_tools, None, None, None, None
        )
        trial.requests.append(record)
        self._log(token, record, data)
        relayed = Relayed()
        try:
            return await self._answer(request, trial, record, body, data, relayed)
        finally:
            if trial.bodies is not None:
                _keep_bodies(trial.bodies, record, data, relayed)

    async def _answer(
        self,
        request: web.Request,
        trial: Trial,
        record: RequestRecord,
        body: bytes,
        data: Any,
        relayed: Relayed,
    ) -> web.StreamResponse:
        if trial.over_cap(record):
            record.injected, record.status = CAP, 400
            payload = {"type": "error", "error": {"type": "invalid_request_error",
                       "message": "meter: the priming run's one step is spent"}}  # fmt: skip
            return _own_answer(relayed, payload, status=400, headers=None)
        fault = trial.faults.fault_for(record.index)
        if fault is not None:
            record.injected = fault
            return await self._inject(request, record, fault, relayed)
        strip_usage = _wants_usage_opt_in(record.protocol, data)
        if strip_usage:
            options = {**(data.get("stream_options") or {}), "include_usage": True}
            body = json.dumps({**data, "stream_options": options}).encode()
        tail = request.match_info["tail"]
        url = f"{trial.upstream}/{tail}"
        if request.query_string:
            url += "?" + request.query_string
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP]
        headers.append(("Accept-Encoding", "identity"))  # counting reads the plain stream
        assert self.session is not None
        started = time.perf_counter()
        try:
            try:
                upstream = await self.session.request(
                    request.method, url, headers=headers, data=body, allow_redirects=False
                )
            except Exception as error:  # unreachable upstream: the client sees a gateway error
                record.failure = failure_of(error)
                return _own_answer(
                    relayed,
                    {"error": f"meter: upstream unreachable: {error}"},
                    status=502,
                    headers={FAILURE_HEADER: record.failure},
                )
            async with upstream:
                record.latency_s = time.perf_counter() - started
                record.status = upstream.status
                return await self._relay(request, upstream, record, strip_usage, relayed)
        finally:
            record.duration_s = time.perf_counter() - started

    async def _relay(
        self,
        request: web.Request,
        upstream: Any,
        record: RequestRecord,
        strip_usage: bool,
        relayed: Relayed,
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        for key, value in upstream.headers.items():
            if key.lower() not in HOP_BY_HOP or key.lower() == "content-encoding":
                response.headers.add(key, value)
        streamed = "text/event-stream" in upstream.headers.get("content-type", "")
        if not streamed and upstream.content_length is not None:
            response.content_length = upstream.content_length
        await response.prepare(request)
        if not streamed:
            body = b"".join([chunk async for chunk in self._chunks(upstream, record)])
            relayed.add(body)
            await response.write(body)
            if record.protocol and 200 <= upstream.status < 300:
                record.usage = body_usage(record.protocol, body)
            await response.write_eof()
            return response
        counter = StreamCounter(record.protocol) if record.protocol else None
        splitter = EventSplitter()
        try:
            async for chunk in self._chunks(upstream, record):
                out = chunk
                if counter is not None:
                    kept = []
                    for event in splitter.feed(chunk):
                        usage_only = counter.event(event_data(event))
                        if not (strip_usage and usage_only):
                            kept.append(event)
                    if strip_usage:
                        out = b"".join(kept)  # the tail of a cut event follows with its end
                if out:
                    relayed.add(out)
                    await response.write(out)
            if strip_usage:
                relayed.add(rest := splitter.rest())
                await response.write(rest)
        finally:
            if counter is not None and 200 <= upstream.status < 300:
                record.usage = counter.usage
        await response.write_eof()
        return response

    @staticmethod
    async def _chunks(upstream: Any, record: RequestRecord) -> Any:
        """The upstream's stream; one it cuts off is a connection reset on the record (the
        client sees its own connection cut as well)."""
        try:
            async for chunk in upstream.content.iter_any():
                yield chunk
        except (ClientConnectionError, ClientPayloadError, ConnectionResetError) as error:
            record.failure = failure_of(error)
            raise

    async def _inject(
        self, request: web.Request, record: RequestRecord, fault: str, relayed: Relayed
    ) -> web.StreamResponse:
        if fault == HANG:
            await asyncio.sleep(HANG_SECONDS)
            raise web.HTTPGatewayTimeout()
        if fault == DROP:
            response = web.StreamResponse(status=200)
            response.content_type = "text/event-stream"
            await response.prepare(request)
            relayed.add(drop := b": meter: injected stream drop\n\n")
            await response.write(drop)
            record.status = 200
            if request.transport is not None:
                request.transport.close()
            return response
        status = int(fault)
        record.status = status
        payload = {
            "type": "error",
            "error": {"type": "injected_fault", "message": f"meter: injected {status}"},
        }
        headers = {"retry-after": "0"} if status == 429 else None
        return _own_answer(relayed, payload, status=status, headers=headers)

    def _log(self, token: str, record: RequestRecord, data: Any) -> None:
        if self.log is None:
            return
        line = {"trial": token, "index": record.index, "path": record.path, "request": data}
        with self.log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")


def _own_answer(
    relayed: Relayed, payload: Any, status: int, headers: dict[str, str] | None
) -> web.Response:
    """A JSON answer of the meter's own (a fault, a gateway error), kept as relayed."""
    response = web.json_response(payload, status=status, headers=headers)
    if isinstance(response.body, bytes):
        relayed.add(response.body)
    return response


def _keep_bodies(path: Path, record: RequestRecord, data: Any, relayed: Relayed) -> None:
    """Append the finished request's line: its record, the request as the client sent it and
    the response as relayed (never a header)."""
    line = {
        **record.to_json(),
        "request": data,
        "response": relayed.text(),
        "cut": relayed.cut,
    }
    try:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")
    except OSError:
        pass  # evidence lost (its directory gone, a full disk) never fails the agent's request
