"""--agentbench-budget-usd / --agentbench-budget-tokens: no new trial once the spend is reached.

The spend is what this session's trials reported (cost_usd, and tokens as the metrics count
them: input with cached, output with reasoning); a trial that reported none adds nothing and
is counted as unknown. Reused trials of a resumed run cost nothing now.

Who knows the spend: the controller, as each Observation arrives. Serially it is also the
process that starts trials, and asks its own tally. Under xdist it appends one short line per
trial to a spend file in the run directory (named per session, removed at the end) and every
worker reads the lines added since it last looked before starting a trial, so at most the
trials already running go past the budget. A trial not started is skipped with an Observation
of status ``budget_exhausted``: not scored, not observed for coverage, run again on resume.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.plan.arm_trials import arm_name
from pytest_agentbench.plan.collect import TaskItem
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.observation import (
    OBSERVATION_KEY,
    Observation,
    attached,
    error_observation,
)

STATUS = "budget_exhausted"
WORKER_INPUT = "agentbench_budget_spend"


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


class BudgetGate:
    """On the process that starts trials: skips each trial whose turn comes after the budget."""

    def __init__(self, settings: Settings, spend: Callable[[], Spend]) -> None:
        self.settings = settings
        self.spend = spend

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if not isinstance(item, TaskItem) or item.reused is not None:
            return
        why = reached(self.settings, self.spend())
        if why is not None:
            item.stash[OBSERVATION_KEY] = error_observation(
                item.task_id, item.repeat, why, STATUS, item.task, arm_name(item.arm)
            )
            pytest.skip(f"not started: {why}")


class SpendFileReader:
    """On an xdist worker: the spend so far, from the lines added to the spend file since the
    last look (one read, no lock: the controller appends whole lines)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.spend = Spend()
        self.handle: Any = None
        self.partial = b""

    def __call__(self) -> Spend:
        if self.handle is None:
            try:
                self.handle = open(self.path, "rb")  # noqa: SIM115 - read across the session
            except FileNotFoundError:
                return self.spend  # nothing was spent yet
        data = self.partial + self.handle.read()
        *lines, self.partial = data.split(b"\n")
        for line in lines:
            record = json.loads(line)
            self.spend.add(record["usd"], record["tokens"])
        return self.spend


class BudgetLedger:
    """On the controller: tallies the spend, shares it with workers, reports and sets the exit."""

    def __init__(self, settings: Settings, run_dir: Path) -> None:
        self.settings = settings
        self.run_dir = run_dir
        self.spend = Spend()
        self.not_started = 0
        self.spend_path = run_dir / f".spend-{secrets.token_hex(4)}.jsonl"
        self.shared = False  # whether workers read the spend file
        self.handle: Any = None

    def current(self) -> Spend:
        return self.spend

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        self.shared = True
        node.workerinput[WORKER_INPUT] = str(self.spend_path)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        observation = attached(report)
        if observation is None or observation.get("reused"):
            return
        if observation["status"] == STATUS:
            self.not_started += 1
            return
        cost, tokens = spend_of(observation)
        self.spend.add(cost, tokens)
        if self.shared:
            if self.handle is None:
                self.run_dir.mkdir(parents=True, exist_ok=True)
                self.handle = open(self.spend_path, "a", encoding="utf-8")  # noqa: SIM115
            self.handle.write(json.dumps({"usd": cost, "tokens": tokens}) + "\n")
            self.handle.flush()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None
        if self.shared:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.spend_path)
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
            f"{'trial' if self.not_started == 1 else 'trials'} not started (budget_exhausted); "
            f"continue with --agentbench-resume={self.run_dir}",
            red=True,
        )
