"""run.lock: which process is writing a run directory, held for as long as it writes.

The controller of a session takes an exclusive flock(2) on <run dir>/run.lock when it opens
the directory (a detached run: as soon as it starts) and the kernel lets go when the process
ends, however it ends, so a lock can never outlive its run. The file says who holds it (pid,
process group, host, start time): `agentbench stop` signals that process only while the lock
is held, and a second session aimed at the same directory is refused instead of interleaving
its lines with the first's.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

LOCK_FILE = "run.lock"


def holder(directory: Path) -> dict[str, Any] | None:
    """Who holds the directory's lock now (None: no process does)."""
    try:
        handle = open(directory / LOCK_FILE, "rb")  # noqa: SIM115
    except FileNotFoundError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = handle.read()
        else:
            return None
    try:
        found = json.loads(text)
    except ValueError:  # taken a moment ago, not written yet
        found = None
    return found if isinstance(found, dict) else {"pid": None, "host": None, "started_at": None}


def in_use(directory: Path, held: dict[str, Any]) -> str:
    """The refusal of a session aimed at a directory another process writes."""
    return (
        f"run directory {directory} is in use by pid {held.get('pid')} on {held.get('host')} "
        f"(since {held.get('started_at')}): wait for that run to end, stop it with "
        f"`agentbench stop {directory}`, or give another --agentbench-dir"
    )


class RunLock:
    """On the controller: takes run.lock when the directory opens, keeps it to the end."""

    def __init__(self, directory: Path, *, detached: bool) -> None:
        self.directory = directory
        self.detached = detached  # its own process group: `agentbench stop` signals all of it
        self.handle: Any = None

    def refuse_if_held(self) -> None:
        """At configure: a directory another session writes is a usage error, before any trial."""
        held = holder(self.directory)
        if held is not None:
            raise pytest.UsageError(in_use(self.directory, held))

    def acquire(self) -> None:
        if self.handle is not None:
            return
        from pytest_agentbench.run.store import now

        self.directory.mkdir(parents=True, exist_ok=True)
        handle = open(self.directory / LOCK_FILE, "a+", encoding="utf-8")  # noqa: SIM115
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise pytest.UsageError(in_use(self.directory, holder(self.directory) or {})) from None
        handle.truncate(0)
        record = {
            "pid": os.getpid(),
            "pgid": os.getpgid(0) if self.detached else None,
            "host": socket.gethostname(),
            "started_at": now(),
            "detached": self.detached,
            "argv": sys.argv,
        }
        handle.write(json.dumps(record) + "\n")
        handle.flush()
        self.handle = handle

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """A detached run takes it once its configuration has been checked: the command that
        started it is waiting for that (detach.py)."""
        if self.detached:
            self.acquire()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        """The first trial opens the directory (store.RunWriter): from then on it is ours."""
        self.acquire()

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """A session in a process of its own (detached) keeps the lock until the process has
        ended, so `agentbench stop` says the run has ended only once it has; a session inside
        a longer process (pytest.main) lets go when it ends."""
        if self.handle is not None and not self.detached:
            with contextlib.suppress(OSError):
                self.handle.close()
            self.handle = None
