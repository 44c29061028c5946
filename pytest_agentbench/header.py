"""The run header: what will run, so a paid run is never a surprise (the plan that follows
collection is report/plan.py)."""

from __future__ import annotations

import pytest

from pytest_agentbench.plan.collect import SETTINGS_KEY
from pytest_agentbench.report.plan import warning_lines
from pytest_agentbench.settings import Settings


def header_lines(config: pytest.Config) -> list[str]:
    settings: Settings = config.stash[SETTINGS_KEY]
    from pytest_agentbench.sandbox import provider_for
    from pytest_agentbench.trial.process import agent_info

    provider = provider_for(config, settings)
    version = agent_info(config, settings).get("cli_version")
    agent = f"{settings.agent} ({version})" if version else settings.agent
    return [
        f"agentbench: agent {agent}, model {settings.model or 'default'}, "
        f"reasoning {settings.reasoning or 'default'}, sandbox {provider.kind}, "
        f"repeats {settings.repeats}, oracle recoveries {settings.oracle_recoveries}, "
        f"retry failures {settings.retry_failures}, seed {settings.seed}",
        *warning_lines(config),
    ]
