"""This process's agent and sandbox provider: made once, shared by every trial of the process,
the fixtures, the run header and the reporter."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.agents.base import Agent
from pytest_agentbench.plan.collect import SETTINGS_KEY
from pytest_agentbench.sandbox import provider_for
from pytest_agentbench.sandbox.base import SandboxProvider
from pytest_agentbench.settings import Settings

AGENT_KEY = pytest.StashKey[Agent]()


def unknown_agent(config: pytest.Config, name: str) -> pytest.UsageError:
    """The usage error for an agent no plugin offers, listing the ones that are offered."""
    names = sorted({n for names in config.hook.pytest_agentbench_agent_names() for n in names})
    return pytest.UsageError(f"--agent {name!r}: unknown agent; available: {', '.join(names)}")


def make_agent(config: pytest.Config, settings: Settings) -> Agent:
    """The agent named by --agent, from whichever plugin or conftest.py offers it."""
    agent = config.hook.pytest_agentbench_make_agent(
        name=settings.agent, settings=settings, config=config
    )
    if agent is None:
        raise unknown_agent(config, settings.agent)
    return agent


def process_agent(config: pytest.Config, settings: Settings) -> Agent:
    """This process's agent, made once and shared by the fixtures, header and reporter; it
    learns its sandbox before anyone asks either of them anything."""
    if AGENT_KEY not in config.stash:
        agent = make_agent(config, settings)
        agent.use_sandbox(provider_for(config, settings))
        if not config.option.collectonly:
            agent.preflight()
        config.stash[AGENT_KEY] = agent
    return config.stash[AGENT_KEY]


def agent_info(config: pytest.Config, settings: Settings) -> dict[str, Any]:
    """What the run records about its agent (name, CLI version, metering), from this
    process's agent."""
    return process_agent(config, settings).info()


def process_parts(config: pytest.Config) -> tuple[Settings, Agent, SandboxProvider]:
    """The run's settings, this process's agent and its sandbox provider (which the agent has
    learned, so it may have placed the trials)."""
    settings = config.stash[SETTINGS_KEY]
    return settings, process_agent(config, settings), provider_for(config, settings)
