"""Built-in agents, offered through the pytest_agentbench_make_agent hook."""

from __future__ import annotations

import pytest

from pytest_agentbench import hookimpl
from pytest_agentbench.agents.base import Agent
from pytest_agentbench.settings import Settings


def _builtin_agents() -> dict[str, type[Agent]]:
    from pytest_agentbench.agents.command import CommandAgent
    from pytest_agentbench.agents.mock import MockAgent
    from pytest_agentbench.agents.offline import NopAgent, OracleAgent

    return {cls.name: cls for cls in (OracleAgent, NopAgent, MockAgent, CommandAgent)}


BUILTIN_NAMES = ("oracle", "nop", "mock", "command")


class BuiltinAgents:
    """The hook implementations that make the built-in agents."""

    @hookimpl(trylast=True)
    def pytest_agentbench_agent_names(self) -> list[str]:
        return list(BUILTIN_NAMES)

    @hookimpl(trylast=True)
    def pytest_agentbench_make_agent(
        self, name: str, settings: Settings, config: pytest.Config
    ) -> Agent | None:
        factory = _builtin_agents().get(name)
        return factory(settings) if factory is not None else None
