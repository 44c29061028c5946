"""Run the metering proxy: `python -m pytest_agentbench.meter [--log FILE] [--max-seconds S]`.

Prints its port on the first line of stdout once it listens on 127.0.0.1; with --listen HOST
(and --tls CERT,KEY) the trials' routes alone are served on HOST too, on a port of their own
printed after the first. It stops when its stdin closes (the harness that started it exited or
let go), or after --max-seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import ssl
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

from pytest_agentbench.meter.server import Meter


def _watch_stdin(stop: asyncio.Event) -> None:
    """Read and drop stdin; its end means the harness has gone."""
    fd = sys.stdin.fileno()
    if not os.read(fd, 4096):
        asyncio.get_running_loop().remove_reader(fd)
        stop.set()


async def _site(app: web.Application, host: str, ssl_context: Any = None) -> tuple[Any, int]:
    """app served on host at a free port: (its runner, the port)."""
    # A stop does not wait for requests held by a `hang` fault: their clients are gone too.
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, 0, ssl_context=ssl_context)
    await site.start()
    server = site._server
    assert server is not None and server.sockets  # type: ignore[attr-defined]
    return runner, int(server.sockets[0].getsockname()[1])  # type: ignore[attr-defined]


async def serve(
    log: Path | None, max_seconds: float, listen: str | None = None, tls: str | None = None
) -> None:
    meter = Meter(log)
    runners = []
    try:
        runner, port = await _site(meter.app(), "127.0.0.1")
        runners.append(runner)
        ports = [port]
        if listen is not None:
            context = None
            if tls is not None:
                cert, _, key = tls.partition(",")
                context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
                context.load_cert_chain(cert, key)
            runner, port = await _site(meter.app(control=False), listen, context)
            runners.append(runner)
            ports.append(port)
        print(*ports, flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_reader(sys.stdin.fileno(), _watch_stdin, stop)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), max_seconds)
    finally:
        for runner in reversed(runners):
            await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pytest_agentbench.meter")
    parser.add_argument("--log", type=Path, help="append each request body (JSON lines) here")
    parser.add_argument("--max-seconds", type=float, default=24 * 3600.0)
    parser.add_argument("--listen", help="serve the trials' routes on this address too")
    parser.add_argument("--tls", metavar="CERT,KEY", help="over TLS with this certificate")
    args = parser.parse_args(argv)
    asyncio.run(serve(args.log, args.max_seconds, args.listen, args.tls))


if __name__ == "__main__":
    main()
