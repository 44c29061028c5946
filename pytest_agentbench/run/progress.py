"""progress.jsonl: what the current session of a run is doing, for `agentbench status`.

The controller writes it, one short line per event, rewritten at each session: the session
(pid, host, time), the planned trial count once collection is known, each trial's start and
end (by node id, as xdist reports them; a trial run ahead of its turn starts when it starts
without xdist, when its turn comes under a worker), the stop (a budget, the breaker, a signal
or `agentbench stop`) once no new trial starts, and the session's end with pytest's exit
status.
Lines are flushed, never fsynced: the file is a live view, the record is observations.jsonl.
Workers write nothing, so a trial pays for no file of its own.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench.plan.collect import TaskItem
from pytest_agentbench.tasks.observation import attached

if TYPE_CHECKING:
    from pytest_agentbench.run.stop import Stop

PROGRESS_FILE = "progress.jsonl"


class ProgressLog:
    """Controller-only plugin writing <run dir>/progress.jsonl."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / PROGRESS_FILE
        self.handle: Any = None
        self.planned = False
        self.ahead: set[str] = set()  # trials whose start was written when they started

    def _write(self, line: str) -> None:
        """Append one line (a JSON object) and flush it."""
        if self.handle is None:  # opened at the first event: no run, no file
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.handle = open(self.path, "w", encoding="utf-8")  # noqa: SIM115
            session = {"session": time.time(), "pid": os.getpid(), "host": socket.gethostname()}
            self.handle.write(json.dumps(session) + "\n")
        self.handle.write(line)
        self.handle.flush()

    def _plan(self, count: int) -> None:
        if count and not self.planned:
            self.planned = True
            self._write(f'{{"planned":{count}}}\n')

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Serial runs: the selected trials (under xdist the controller collects nothing)."""
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            return  # pytest stops at the collection error: no trial runs, no file is made
        self._plan(sum(1 for item in session.items if isinstance(item, TaskItem)))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self._plan(len(ids))  # every worker collects the same items

    def started_ahead(self, nodeid: str) -> None:
        """A trial of this process started ahead of its turn (run/ahead.py): it runs now."""
        self.ahead.add(nodeid)
        self._start(nodeid)

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        if nodeid in self.ahead:
            self.ahead.discard(nodeid)
            return
        self._start(nodeid)

    def _start(self, nodeid: str) -> None:
        if self.planned:  # formatted by hand: per trial, json.dumps of a dict costs more
            self._write(f'{{"start":{json.dumps(nodeid)},"t":{time.time():.3f}}}\n')

    def stopping(self, stop: Stop) -> None:
        """The run's stop gate closed (run/stop.py): the trials running are its last.

        Called from a signal handler too, which may have interrupted a write of the buffered
        file: the line goes straight to its descriptor, one write(2) of a whole line."""
        if self.handle is not None:
            line = json.dumps({"stopping": stop.by, "reason": stop.reason}) + "\n"
            os.write(self.handle.fileno(), line.encode())

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        observation = attached(report)
        if observation is None or self.handle is None:
            return
        reused = ',"reused":true' if observation.get("reused") else ""
        self._write(
            f'{{"end":{json.dumps(report.nodeid)},"t":{time.time():.3f},'
            f'"status":{json.dumps(observation["status"])}{reused}}}\n'
        )

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.handle is None:
            return
        self._write(f'{{"finished":{time.time():.3f},"exitstatus":{int(session.exitstatus)}}}\n')
        self.handle.close()
        self.handle = None
