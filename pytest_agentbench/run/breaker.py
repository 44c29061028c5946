"""--agentbench-max-consecutive-failures: the run's one circuit breaker.

After K trials in a row end in an infrastructure failure, or in a failed model call that left
the workspace unchanged (Observation `failed_call`), no new trial starts: an outage must not
burn a budget, nor fill a report with failures that measure nothing. A trial that ran and
ended otherwise starts the count again; provider stops (which stop the run by themselves),
harness errors, reused trials and trials not started neither count nor reset it.

Like the budget (budget.py), the controller counts, in the order the Observations arrive, and
an open breaker closes the run's stop gate (stop.py): the session ends once the trials already
running have ended. A trial not started meanwhile (under xdist, one a worker was about to
start) is skipped with an Observation of status ``breaker_open``: not scored, run again on
resume.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.run.stop import RunStop, Stop
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.observation import (
    BREAKER_OPEN,
    INFRASTRUCTURE,
    SCORED,
    Observation,
    attached,
)


def counted_cause(observation: Observation) -> str | None:
    """The cause that counts the trial toward the breaker; "" for a trial that resets the
    count; None for one that does neither."""
    if observation.get("reused") or observation["status"] not in (SCORED, INFRASTRUCTURE):
        return None
    if observation["status"] == INFRASTRUCTURE:
        return observation["cause"] or "unknown"
    return observation.get("failed_call") or ""


class Breaker:
    """On the controller: counts trials in a row, opens the breaker, reports why."""

    def __init__(self, settings: Settings, stops: RunStop) -> None:
        self.limit = settings.max_consecutive_failures
        self.stops = stops
        self.in_a_row = 0
        self.reason: str | None = None
        self.not_started = 0

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
        self.reason = (
            f"{self.limit} trials in a row ended in an infrastructure failure or a failed "
            f"model call that changed nothing (last: {cause})"
        )
        self.stops.close(Stop("breaker", BREAKER_OPEN, self.reason, halts=True))

    @pytest.hookimpl
    def pytest_agentbench_report_json(self, config: pytest.Config, report: dict[str, Any]) -> None:
        report["run"]["breaker"] = {
            "max_consecutive_failures": self.limit,
            "open": self.reason is not None,
            "reason": self.reason,
            "not_started": self.not_started,
        }

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.reason is None:
            return
        skipped = f" ({self.not_started} skipped)" if self.not_started else ""
        terminalreporter.write_line(
            f"agentbench breaker: {self.reason}; no new trial started{skipped}",
            red=True,
        )
