"""The plan printed once collection is done: trials, sessions and at most how many agent rounds
the selection will cost, the sandbox's warnings, and the legend of the progress letters; with
--agentbench-plan=json, the plan as a JSON document on stdout instead of a run."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from typing import Any

import pytest

from pytest_agentbench.fs.wording import plural
from pytest_agentbench.plan.collect import SETTINGS_KEY
from pytest_agentbench.settings import Settings

PLAN_SCHEMA = "agentbench-plan/1"
TRIAL_NODEID = re.compile(r"^(?P<task>.+?)(?:::[^:]+)?::r\d+$")
"""A trial's node id: its task's node id, then its arm in a run with arms, then the repeat
(see collect.make_items and arm_trials.item_name)."""


def warning_lines(config: pytest.Config) -> list[str]:
    """The sandbox's warning (an agent that is not isolated), if it has one, that arms under
    it may not be alone in instructing the agent, and why process limits are off where the
    sandbox cannot make them."""
    from pytest_agentbench.plan.arm_trials import run_arms
    from pytest_agentbench.sandbox import provider_for

    provider = provider_for(config, config.stash[SETTINGS_KEY])
    warning = provider.warning()
    limits_off = provider.process_limits_off()
    return [
        *([f"agentbench WARNING: {warning}"] if warning else []),
        *(
            [
                "agentbench WARNING: arms under --sandbox=tmp: instruction files in folders "
                "above the workspace (CLAUDE.md, AGENTS.md) may reach the agent; use bwrap or "
                "docker"
            ]
            if provider.kind == "tmp" and run_arms(config) is not None
            else []
        ),
        *(
            [f"agentbench: process limits off ({limits_off}): pids and memory are not limited"]
            if limits_off
            else []
        ),
    ]


def header_shown(config: pytest.Config) -> bool:
    """Whether pytest prints the header lines (-q and --no-header drop them)."""
    return config.get_verbosity() >= 0 and not config.getoption("no_header", False)


def plan_lines(config: pytest.Config, nodeids: Iterable[str]) -> list[str]:
    """Printed once collection is done: the plan, the warning if the header was not printed,
    and the legend of the progress and task-table letters if trials will run."""
    from pytest_agentbench.report.letters import LEGEND

    trials = [match["task"] for match in map(TRIAL_NODEID.match, nodeids) if match]
    lines = [plan_line(config.stash[SETTINGS_KEY], len(set(trials)), len(trials))] if trials else []
    if not header_shown(config):
        lines += warning_lines(config)
    if trials and not config.option.collectonly:
        lines.append(LEGEND)
    return lines


def most_rounds(settings: Settings, trials: int) -> int:
    """The agent rounds the trials cost at most: every leg, recovery and retry taken."""
    return trials * (settings.segments + settings.oracle_recoveries) * (1 + settings.retry_failures)


def plan_line(settings: Settings, tasks: int, trials: int) -> str:
    """How many trials and, at most, how many agent rounds the selection will cost."""
    rounds = most_rounds(settings, trials)
    plan = f"agentbench: {plural(tasks, 'task')}, {plural(trials, 'trial')}"
    if rounds == trials:
        return f"{plan}, {plural(trials, 'agent session')}"
    return (
        f"{plan}, at most {plural(rounds, 'agent round')} "
        f"({plural(trials, 'session')} plus recoveries/retries)"
    )


def plan_document(config: pytest.Config, nodeids: list[str]) -> dict[str, Any]:
    """The plan as data (schema agentbench-plan/1): what a run of this selection would do."""
    from pytest_agentbench.plan.arm_trials import run_arms
    from pytest_agentbench.sandbox import provider_for
    from pytest_agentbench.trial.process import agent_info

    settings: Settings = config.stash[SETTINGS_KEY]
    tasks = {match["task"] for match in map(TRIAL_NODEID.match, nodeids) if match}
    info = agent_info(config, settings)
    arms = run_arms(config)
    return {
        "schema": PLAN_SCHEMA,
        "tasks": len(tasks),
        "trials": len(nodeids),
        "agent_sessions": {
            "at_least": len(nodeids),
            "at_most": len(nodeids) * (1 + settings.retry_failures),
        },
        "agent_rounds_at_most": most_rounds(settings, len(nodeids)),
        "repeats": settings.repeats,
        "arms": [arm.name for arm in arms] if arms is not None else None,
        "agent": info,
        "metered": info.get("meter") == "metered",
        "sandbox": provider_for(config, settings).describe(),
        "budget": {"usd": settings.budget_usd, "tokens": settings.budget_tokens},
        "seed": settings.seed,
        "trial_ids": nodeids,
    }


class PlanJson:
    """--agentbench-plan=json: the plan alone on stdout, pytest's own lines on stderr.

    Made while pytest configures, before its terminal reporter: stdout stands for stderr until
    the session starts, so the reporter writes there."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.stdout = sys.stdout
        sys.stdout = sys.stderr

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        sys.stdout = self.stdout

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        sys.stdout = self.stdout  # a configuration that failed never started a session

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        nodeids = [item.nodeid for item in session.items if TRIAL_NODEID.match(item.nodeid)]
        sys.stdout.write(json.dumps(plan_document(self.config, nodeids), indent=1) + "\n")
        sys.stdout.flush()
