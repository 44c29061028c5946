"""`agentbench view RUN_DIR|report.json ...`: the run viewer, served on 127.0.0.1 while run
directories are written, or written as a static bundle (--bundle OUT/)."""

from __future__ import annotations

import argparse
import time
import webbrowser
from pathlib import Path

HELP = (
    "view run directories or reports in a browser: served on 127.0.0.1 (live while a run "
    "writes), or as static files (--bundle OUT/)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "sources", type=Path, nargs="+", help="run directories, JSON reports or merged reports"
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: free)")
    parser.add_argument("--open", action="store_true", help="open the page in a browser")
    parser.add_argument(
        "--bundle", type=Path, metavar="OUT", help="write the viewer as static files into OUT/"
    )
    parser.add_argument(
        "--for",
        dest="for_s",
        type=float,
        default=None,
        metavar="SECONDS",
        help="serve this long, then stop (default: until Ctrl-C)",
    )


def _sources(paths: list[Path]) -> list[Path]:
    """The sources as given; one that does not exist is named before anything is read."""
    for path in paths:
        if not path.exists():
            raise ValueError(f"{path}: no such run directory or report")
    return paths


def run(args: argparse.Namespace) -> int:
    from pytest_agentbench.view.viewer import Viewer

    sources = _sources(args.sources)
    if args.bundle is not None:
        from pytest_agentbench.view.bundle import write_bundle

        written = write_bundle(Viewer(sources), args.bundle)
        print(f"wrote the viewer with {written} payloads to {args.bundle}/")
        print(f"open {(args.bundle / 'index.html').resolve().as_uri()}")
        return 0
    from pytest_agentbench.view.server import ViewServer
    from pytest_agentbench.view.snapshot import take_apart

    viewer = Viewer(sources, take_apart)
    viewer.current()  # read and scored once before the address is given out
    server = ViewServer(viewer, args.port)
    print(f"agentbench view: serving {len(args.sources)} source(s) at {server.url}", flush=True)
    print("press Ctrl-C to stop", flush=True)
    if args.open:
        webbrowser.open(server.url)
    server.start()
    try:
        deadline = None if args.for_s is None else time.monotonic() + args.for_s
        while deadline is None or time.monotonic() < deadline:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
    return 0
