"""Built-in agents, offered through the pytest_agentbench_make_agent hook: oracle, nop and mock
(offline), command, and the Codex, Claude Code and opencode CLIs with their event parsing and
native delivery of arms. May import sandbox/, meter/, tasks/, testing/ (the CLI pins), fs/ and
settings; never grading/ or anything above."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_agentbench import hookimpl
from pytest_agentbench.agents.base import Agent
from pytest_agentbench.agents.prices import Price, PriceTableError, load_prices
from pytest_agentbench.settings import Settings

if TYPE_CHECKING:
    from pytest_agentbench.agents.cli_base import CliAgent


def _builtin_agents() -> dict[str, type[Agent]]:
    from pytest_agentbench.agents.command import CommandAgent
    from pytest_agentbench.agents.mock import MockAgent
    from pytest_agentbench.agents.offline import NopAgent, OracleAgent

    return {cls.name: cls for cls in (OracleAgent, NopAgent, MockAgent, CommandAgent)}


def _cli_agents() -> dict[str, type[CliAgent]]:
    from pytest_agentbench.agents.claude import ClaudeAgent
    from pytest_agentbench.agents.codex import CodexAgent
    from pytest_agentbench.agents.opencode import OpencodeAgent

    return {cls.name: cls for cls in (CodexAgent, ClaudeAgent, OpencodeAgent)}


CLI_NAMES = ("codex", "claude", "opencode")
BUILTIN_NAMES = ("oracle", "nop", "mock", "command", *CLI_NAMES)


def price_table(config: pytest.Config) -> dict[str, Price]:
    """The --agentbench-prices table (empty without one); a bad table is a usage error."""
    raw = config.getoption("prices", None) or config.getini("agentbench_prices")
    if not raw:
        return {}
    try:
        return load_prices(Path(raw))
    except PriceTableError as exc:
        raise pytest.UsageError(f"--agentbench-prices: {exc}") from None


class BuiltinAgents:
    """The hook implementations that make the built-in agents."""

    @hookimpl(trylast=True)
    def pytest_agentbench_agent_names(self) -> list[str]:
        return list(BUILTIN_NAMES)

    @hookimpl(trylast=True)
    def pytest_agentbench_make_agent(
        self, name: str, settings: Settings, config: pytest.Config
    ) -> Agent | None:
        if name in CLI_NAMES:  # their adapters are imported only for them
            return _cli_agents()[name](settings, prices=price_table(config))
        factory = _builtin_agents().get(name)
        return factory(settings) if factory is not None else None
