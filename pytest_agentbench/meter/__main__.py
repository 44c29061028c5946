"""Run the metering proxy: `python -m pytest_agentbench.meter [--log FILE] [--max-seconds S]`.

Prints its port on the first line of stdout once it listens on 127.0.0.1. It stops when its
stdin closes (the harness that started it exited or let go), or after --max-seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from aiohttp import web

from pytest_agentbench.meter.server import Meter


def _watch_stdin(stop: asyncio.Event) -> None:
    """Read and drop stdin; its end means the harness has gone."""
    fd = sys.stdin.fileno()
    if not os.read(fd, 4096):
        asyncio.get_running_loop().remove_reader(fd)
        stop.set()


async def serve(log: Path | None, max_seconds: float) -> None:
    # A stop does not wait for requests held by a `hang` fault: their clients are gone too.
    runner = web.AppRunner(
        Meter(log).app(), access_log=None, handle_signals=False, shutdown_timeout=1.0
    )
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server
    assert server is not None and server.sockets  # type: ignore[attr-defined]
    port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
    print(port, flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_reader(sys.stdin.fileno(), _watch_stdin, stop)
    try:
        await asyncio.wait_for(stop.wait(), max_seconds)
    except TimeoutError:
        pass
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pytest_agentbench.meter")
    parser.add_argument("--log", type=Path, help="append each request body (JSON lines) here")
    parser.add_argument("--max-seconds", type=float, default=24 * 3600.0)
    args = parser.parse_args(argv)
    asyncio.run(serve(args.log, args.max_seconds))


if __name__ == "__main__":
    main()
