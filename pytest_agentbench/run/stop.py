"""Stopping a run: one gate that, once closed for a reason, starts no new trial.

Three things close it: the budget (budget.py), the circuit breaker (breaker.py) and an
interruption (the first SIGINT or SIGTERM, Interruption below). The controller decides, as the
Observations arrive; under xdist it writes the stop to a stop file in the run directory (named
per session, removed at the end) and every worker reads it before it starts a trial, so at
most the trials already running end after the gate closes. A trial not started is skipped
with an Observation of the stop's status (budget_exhausted, breaker_open, interrupted): not
scored, run again on resume.

A budget lets the session go on, recording every remaining trial as not started; the breaker
and an interruption end it once the trials in flight have ended and been recorded. Ctrl-C
signals every process of the run (the workers share the controller's process group); a signal
sent to the controller alone reaches the workers through the stop file. A second signal stops
at once, as pytest does without this plugin (the agent's process group is killed with the
trial: sandbox/base.py), and the run is recorded as interrupted either way.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import signal
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

import pytest

from pytest_agentbench.plan.arm_trials import arm_name
from pytest_agentbench.plan.collect import TaskItem
from pytest_agentbench.tasks.observation import INTERRUPTED, OBSERVATION_KEY, error_observation
from pytest_agentbench.trial.fixtures import AHEAD_KEY

WORKER_INPUT = "agentbench_stop_file"
RESUME_ARGS_KEY = pytest.StashKey[list[str]]()  # pytest's arguments that a resume repeats
INTERRUPT = "interrupt"
SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass(frozen=True)
class Stop:
    """Why no new trial starts, and what becomes of the session."""

    by: str  # budget | breaker | interrupt
    status: str  # the Observation status of a trial not started
    reason: str
    halts: bool  # end the session after the trials in flight (else: record the rest as skipped)
    at_once: bool = False  # a second signal: the trials in flight stop too


class Stops(Protocol):
    """What a process that starts trials knows of the stop, and how a signal closes it."""

    def current(self) -> Stop | None: ...

    def close(self, stop: Stop) -> None: ...


class StopGate:
    """On the process that starts trials: once the run is stopped, skips every trial."""

    def __init__(self, current: Callable[[], Stop | None]) -> None:
        self.current = current

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if not isinstance(item, TaskItem) or item.reused is not None or AHEAD_KEY in item.stash:
            return  # (a trial run ahead started before the stop: it is recorded)
        stop = self.current()
        if stop is None:
            return
        item.stash[OBSERVATION_KEY] = error_observation(
            item.task_id, item.repeat, stop.reason, stop.status, item.task, arm_name(item.arm)
        )
        if stop.halts:
            item.session.shouldstop = f"agentbench {stop.by}: {stop.reason}"
        pytest.skip(f"not started: {stop.reason}")


def _supersedes(new: Stop, old: Stop | None) -> bool:
    """The first stop holds, but an end of the session outranks a budget, and at once outranks
    both."""
    return old is None or (new.halts and not old.halts) or (new.at_once and not old.at_once)


class RunStop:
    """On the controller: holds the run's stop, shares it with workers and records it."""

    def __init__(
        self,
        run_dir: Path,
        run_record: dict[str, Any],
        announce: Callable[[Stop], None] | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.run_record = run_record  # the run writer's run.json, which says why it stopped
        self.announce = announce  # progress.jsonl: `agentbench status` shows the run stopping
        self.stop: Stop | None = None
        self.path = run_dir / f".stop-{secrets.token_hex(4)}"
        self.shared = False  # whether workers read the stop file
        self.session: pytest.Session | None = None

    def current(self) -> Stop | None:
        return self.stop

    def close(self, stop: Stop) -> None:
        """No new trial from now on: say why to this session, the workers and the record."""
        if not _supersedes(stop, self.stop):
            return
        self.stop = stop
        self.run_record["stopped"] = {"by": stop.by, "reason": stop.reason}
        if self.announce is not None:
            self.announce(stop)
        if self.shared:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(self.path.name + ".tmp")
            temporary.write_text(json.dumps(asdict(stop)), encoding="utf-8")
            os.replace(temporary, self.path)
        if stop.halts and self.session is not None:
            self.session.shouldstop = f"agentbench {stop.by}: {stop.reason}"
            dsession = self.session.config.pluginmanager.get_plugin("dsession")
            if dsession is not None:
                dsession.shouldstop = self.session.shouldstop

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        self.shared = True
        node.workerinput[WORKER_INPUT] = str(self.path)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """After xdist has taken its workers down: one told to stop at once reads it here."""
        if self.shared:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


class StopFile:
    """On an xdist worker: the controller's stop from its stop file, or this worker's own."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.own: Stop | None = None
        self.session: pytest.Session | None = None

    def current(self) -> Stop | None:
        try:
            shared = Stop(**json.loads(self.path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return self.own
        return shared if _supersedes(shared, self.own) else self.own

    def close(self, stop: Stop) -> None:
        """This worker's own stop: a signal it received ends its session after the trial it
        runs; its own count of a budget (budget.WorkerBudget) only starts no new trial."""
        if not _supersedes(stop, self.own):
            return
        self.own = stop
        if stop.halts and self.session is not None:
            self.session.shouldstop = f"agentbench {stop.by}: {stop.reason}"

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session


class Interruption:
    """SIGINT and SIGTERM during the session: the first closes the gate, the second stops at
    once (a KeyboardInterrupt, as without this plugin); pytest's handlers are back afterwards."""

    def __init__(self, stops: Stops, say: Callable[[str], None] | None = None) -> None:
        self.stops = stops
        self.say = say  # the controller tells the terminal; workers have none
        self.received = 0
        self.previous: dict[int, Any] = {}

    def handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        stop = self.stops.current()
        if self.received or (stop is not None and stop.at_once):
            self.stops.close(
                Stop(INTERRUPT, INTERRUPTED, f"{name}: stopped at once", True, at_once=True)
            )
            self.restore()
            raise KeyboardInterrupt
        self.received += 1
        self.stops.close(Stop(INTERRUPT, INTERRUPTED, f"{name}: no new trial started", True))
        if self.say is not None:
            self.say(
                f"agentbench: {name}: no new trial starts; the trials running finish and are "
                "recorded (send it again to stop them at once)"
            )

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may handle signals
        self.previous = {signum: signal.signal(signum, self.handle) for signum in SIGNALS}

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.restore()

    def restore(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        self.previous = {}


def resume_command(config: pytest.Config, run_dir: str) -> str:
    """The command that continues this run, to paste as it is: pytest's arguments as given,
    less the options the run directory records (the face puts them in RESUME_ARGS_KEY)."""
    args = config.stash.get(RESUME_ARGS_KEY, list(config.invocation_params.args))
    return shlex.join(["pytest", *args, "--agentbench-resume", run_dir])
