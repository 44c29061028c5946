"""--agentbench-max-consecutive-failures: the run's one circuit breaker.

After K trials in a row end in an infrastructure failure, or in a failed model call that left
the workspace unchanged (Observation `failed_call`), no new trial starts: an outage must not
burn a budget, nor fill a report with failures that measure nothing. A trial that ran and
ended otherwise starts the count again; provider stops (which stop the run by themselves),
harness errors, reused trials and trials not started neither count nor reset it.

Like the budget (budget.py), the controller counts, in the order the Observations arrive.
Serially it also starts the trials, and stops the session itself. Under xdist it writes the
reason to a trip file in the run directory (named per session, removed at the end), and every
worker looks for that file before it starts a trial, so at most the trials already running
end after the breaker opens. A trial not started is skipped with an Observation of status
``breaker_open``: not scored, run again on resume.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.plan.arm_trials import arm_name
from pytest_agentbench.plan.collect import TaskItem
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.observation import (
    BREAKER_OPEN,
    INFRASTRUCTURE,
    OBSERVATION_KEY,
    SCORED,
    Observation,
    attached,
    error_observation,
)

WORKER_INPUT = "agentbench_breaker_file"


def counted_cause(observation: Observation) -> str | None:
    """The cause that counts the trial toward the breaker; "" for a trial that resets the
    count; None for one that does neither."""
    if observation.get("reused") or observation["status"] not in (SCORED, INFRASTRUCTURE):
        return None
    if observation["status"] == INFRASTRUCTURE:
        return observation["cause"] or "unknown"
    return observation.get("failed_call") or ""


class BreakerGate:
    """On the process that starts trials: once the breaker is open, skips every trial."""

    def __init__(self, opened: Callable[[], str | None]) -> None:
        self.opened = opened

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if not isinstance(item, TaskItem) or item.reused is not None:
            return
        why = self.opened()
        if why is not None:
            item.stash[OBSERVATION_KEY] = error_observation(
                item.task_id, item.repeat, why, BREAKER_OPEN, item.task, arm_name(item.arm)
            )
            item.session.shouldstop = f"agentbench breaker: {why}"
            pytest.skip(f"not started: {why}")


def trip_file_reader(path: Path) -> Callable[[], str | None]:
    """On an xdist worker: the reason in the trip file, once the controller has written it."""

    def opened() -> str | None:
        try:
            return path.read_text(encoding="utf-8") or None
        except FileNotFoundError:
            return None

    return opened


class Breaker:
    """On the controller: counts trials in a row, opens the breaker, reports why."""

    def __init__(self, settings: Settings, run_dir: Path, run_record: dict[str, Any]) -> None:
        self.limit = settings.max_consecutive_failures
        self.run_dir = run_dir
        self.run_record = run_record  # the run writer's run.json, which says why it stopped
        self.in_a_row = 0
        self.reason: str | None = None
        self.not_started = 0
        self.trip_path = run_dir / f".breaker-{secrets.token_hex(4)}"
        self.shared = False  # whether workers look for the trip file
        self.session: pytest.Session | None = None

    def opened(self) -> str | None:
        return self.reason

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        self.shared = True
        node.workerinput[WORKER_INPUT] = str(self.trip_path)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        observation = attached(report)
        if observation is None:
            return
        if observation["status"] == BREAKER_OPEN:
            self.not_started += 1
        cause = counted_cause(observation)
        if cause is None:
            return
        self.in_a_row = self.in_a_row + 1 if cause else 0
        if cause and self.in_a_row >= self.limit and self.reason is None:
            self.open(cause)

    def open(self, cause: str) -> None:
        """No new trial from now on: say why to this session, the workers and the record."""
        self.reason = (
            f"{self.limit} trials in a row ended in an infrastructure failure or a failed "
            f"model call that changed nothing (last: {cause})"
        )
        self.run_record["stopped"] = {"by": "breaker", "reason": self.reason}
        if self.shared:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            temporary = self.trip_path.with_name(self.trip_path.name + ".tmp")
            temporary.write_text(self.reason, encoding="utf-8")
            os.replace(temporary, self.trip_path)
        if self.session is not None:
            self.session.shouldstop = f"agentbench breaker: {self.reason}"
            dsession = self.session.config.pluginmanager.get_plugin("dsession")
            if dsession is not None:
                dsession.shouldstop = self.session.shouldstop

    @pytest.hookimpl
    def pytest_agentbench_report_json(self, config: pytest.Config, report: dict[str, Any]) -> None:
        report["run"]["breaker"] = {
            "max_consecutive_failures": self.limit,
            "open": self.reason is not None,
            "reason": self.reason,
            "not_started": self.not_started,
        }

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.shared:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.trip_path)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.reason is None:
            return
        skipped = f" ({self.not_started} skipped)" if self.not_started else ""
        terminalreporter.write_line(
            f"agentbench breaker: {self.reason}; no new trial started{skipped}; continue with "
            f"--agentbench-resume={self.run_dir}",
            red=True,
        )
