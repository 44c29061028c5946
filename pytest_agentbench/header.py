"""The run header: what will run, so a paid run is never a surprise."""

from __future__ import annotations

import pytest

from pytest_agentbench.collect import SETTINGS_KEY
from pytest_agentbench.settings import Settings


def header_lines(config: pytest.Config) -> list[str]:
    settings: Settings = config.stash[SETTINGS_KEY]
    from pytest_agentbench.reporter import agent_info
    from pytest_agentbench.sandbox import provider_for

    provider = provider_for(config, settings)
    version = agent_info(config, settings).get("cli_version")
    agent = f"{settings.agent} ({version})" if version else settings.agent
    lines = [
        f"agentbench: agent {agent}, model {settings.model or 'default'}, "
        f"reasoning {settings.reasoning or 'default'}, sandbox {provider.kind}, "
        f"repeats {settings.repeats}, oracle recoveries {settings.oracle_recoveries}, "
        f"retry failures {settings.retry_failures}, seed {settings.seed}"
    ]
    warning = provider.warning()
    if warning:
        lines.append(f"agentbench WARNING: {warning}")
    limits_off = provider.process_limits_off()
    if limits_off:
        lines.append(
            f"agentbench: process limits off ({limits_off}): pids and memory are not limited"
        )
    return lines


def plan_line(config: pytest.Config, items: list[pytest.Item]) -> str:
    """How many trials and, at most, how many agent rounds the selection will cost."""
    from pytest_agentbench.collect import TaskItem

    settings: Settings = config.stash[SETTINGS_KEY]
    trials = [item for item in items if isinstance(item, TaskItem)]
    tasks = len({item.task_id for item in trials})
    rounds = len(trials) * (1 + settings.oracle_recoveries) * (1 + settings.retry_failures)
    return (
        f"agentbench: {tasks} tasks, {len(trials)} trials, at most {rounds} agent rounds "
        f"({len(trials)} sessions plus recoveries/retries)"
    )
