"""--agentbench-budget-usd / --agentbench-budget-tokens: no new trial once the spend is reached.

The spend is what this session's trials reported (cost_usd, and tokens as the metrics count
them: input with cached, output with reasoning); a trial that reported none adds nothing and
is counted as unknown. Reused trials of a resumed run cost nothing now.

The controller tallies the spend as each Observation arrives (a trial run ahead of its turn,
--agentbench-concurrency, as soon as it finishes), and once it reaches the budget
closes the run's stop gate (stop.py), which every process checks before it starts a trial: at
most the trials already running go past the budget. The session goes on, and every trial not
started is skipped with an Observation of status ``budget_exhausted``: not scored, not
observed for coverage, run again on resume.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from pytest_agentbench.run.stop import RunStop, Stop
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.observation import Observation, attached

STATUS = "budget_exhausted"


@dataclass
class Spend:
    """Known cost and tokens so far, with how many trials left each unknown."""

    trials: int = 0
    cost_usd: float = 0.0
    cost_unknown: int = 0
    tokens: int = 0
    tokens_unknown: int = 0

    def add(self, cost_usd: float | None, tokens: int | None) -> None:
        self.trials += 1
        if cost_usd is None:
            self.cost_unknown += 1
        else:
            self.cost_usd += cost_usd
        if tokens is None:
            self.tokens_unknown += 1
        else:
            self.tokens += tokens

    def describe(self) -> str:
        text = f"{self.cost_usd:.4f} USD and {self.tokens} tokens known"
        unknown = [
            f"{count} {what}"
            for count, what in (
                (self.cost_unknown, "without a cost"),
                (self.tokens_unknown, "without tokens"),
            )
            if count
        ]
        return text + (f" ({self.trials} trials: {', '.join(unknown)})" if unknown else "")


def spend_of(observation: Observation) -> tuple[float | None, int | None]:
    """(cost, tokens) a trial reported; None where it reported nothing."""
    from pytest_agentbench.tasks.observation import trial_tokens

    tokens = trial_tokens(observation)
    return observation.get("cost_usd"), None if tokens is None else int(tokens)


def reached(settings: Settings, spend: Spend) -> str | None:
    """Which budget the spend has reached, as words (None: none is reached)."""
    if settings.budget_usd is not None and spend.cost_usd >= settings.budget_usd:
        return f"USD budget reached ({spend.cost_usd:.4f} of {settings.budget_usd:g} USD known)"
    if settings.budget_tokens is not None and spend.tokens >= settings.budget_tokens:
        return f"token budget reached ({spend.tokens} of {settings.budget_tokens} tokens known)"
    return None


class BudgetLedger:
    """On the controller: tallies the spend, shares it with workers, reports and sets the exit."""

    def __init__(self, settings: Settings, stops: RunStop) -> None:
        self.settings = settings
        self.stops = stops
        self.spend = Spend()
        self.not_started = 0
        self.counted: set[str] = set()  # trials counted when they finished, ahead of their turn

    def count_ahead(self, nodeid: str, observation: Observation) -> None:
        """A trial run ahead of its turn (run/ahead.py) finished: its spend counts now, so no
        trial starts past the budget while it waits to be reported."""
        self.counted.add(nodeid)
        self.add(observation)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        observation = attached(report)
        if observation is None or observation.get("reused"):
            return
        if observation["status"] == STATUS:
            self.not_started += 1
            return
        if report.nodeid in self.counted:
            self.counted.discard(report.nodeid)
            return
        self.add(observation)

    def add(self, observation: Observation) -> None:
        self.spend.add(*spend_of(observation))
        why = reached(self.settings, self.spend)
        if why is not None:
            self.stops.close(Stop("budget", STATUS, why, halts=False))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.not_started and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        limits = [
            f"{value:g} {unit}"
            for value, unit in (
                (self.settings.budget_usd, "USD"),
                (self.settings.budget_tokens, "tokens"),
            )
            if value is not None
        ]
        line = f"agentbench budget {' and '.join(limits)}: spent {self.spend.describe()}"
        if not self.not_started:
            terminalreporter.write_line(line)
            return
        terminalreporter.write_line(
            f"{line}; budget reached: {self.not_started} "
            f"{'trial' if self.not_started == 1 else 'trials'} not started (budget_exhausted)",
            red=True,
        )
