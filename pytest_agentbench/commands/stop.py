"""`agentbench stop RUN_DIR`: stop the run writing a directory, gracefully.

It sends SIGTERM to the process that holds the directory's run.lock (run/lock.py), and only
while that process holds it, so a pid that has since been reused is never signalled: a
detached run's whole process group (its own session: the controller and its xdist workers),
otherwise the controller, whose workers read the stop from its stop file. SIGTERM is the run's
first interruption (run/stop.py): no new trial starts, the trials running finish and are
recorded, and the run can be resumed. By default the command waits until the run has ended.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import time

from pytest_agentbench.run.lock import holder

HELP = "stop the run writing RUN_DIR: no new trial starts, the trials running finish and are kept"
POLL_S = 0.2
NOT_RUNNING = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", help="the run directory (its run.lock names the run)")
    parser.add_argument("--no-wait", action="store_true", help="return once the signal is sent")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="stop waiting after this many seconds (exit status 3 if the run is still going)",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    directory = Path(args.run_dir)
    if not directory.is_dir():
        raise ValueError(f"{directory}: no such run directory")
    held = holder(directory)
    if held is None:
        print(f"agentbench stop: no run is writing {directory}: nothing to stop")
        return NOT_RUNNING
    if held.get("host") != socket.gethostname() or not isinstance(held.get("pid"), int):
        raise ValueError(
            f"{directory}/run.lock: the run is on host {held.get('host')}: "
            "run `agentbench stop` there"
        )
    pgid = held.get("pgid")
    if held.get("detached") and isinstance(pgid, int):
        os.killpg(pgid, signal.SIGTERM)
        whom = f"process group {pgid}"
    else:
        os.kill(held["pid"], signal.SIGTERM)
        whom = f"pid {held['pid']}"
    print(
        f"agentbench stop: SIGTERM sent to the run in {directory} ({whom}): no new trial "
        "starts; the trials running finish and are recorded"
    )
    if args.no_wait:
        return 0
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    try:
        while holder(directory) is not None:
            if deadline is not None and time.monotonic() > deadline:
                print(f"agentbench stop: the run is still finishing after {args.timeout:g} s")
                return 3
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        return 130
    print(f"agentbench stop: the run has ended; resume it: pytest --agentbench-resume {directory}")
    return 0
