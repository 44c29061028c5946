"""The plan printed once collection is done: trials, sessions and at most how many agent rounds
the selection will cost, the sandbox's warnings, and the legend of the progress letters."""

from __future__ import annotations

import re
from collections.abc import Iterable

import pytest

from pytest_agentbench.fs.wording import plural
from pytest_agentbench.plan.collect import SETTINGS_KEY
from pytest_agentbench.settings import Settings

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


def plan_line(settings: Settings, tasks: int, trials: int) -> str:
    """How many trials and, at most, how many agent rounds the selection will cost."""
    rounds = trials * (1 + settings.oracle_recoveries) * (1 + settings.retry_failures)
    plan = f"agentbench: {plural(tasks, 'task')}, {plural(trials, 'trial')}"
    if rounds == trials:
        return f"{plan}, {plural(trials, 'agent session')}"
    return (
        f"{plan}, at most {plural(rounds, 'agent round')} "
        f"({plural(trials, 'session')} plus recoveries/retries)"
    )
