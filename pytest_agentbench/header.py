"""The run header: what will run, so a paid run is never a surprise (the plan that follows
collection is report/plan.py)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.plan.collect import SETTINGS_KEY
from pytest_agentbench.report.plan import warning_lines
from pytest_agentbench.settings import Settings


def header_lines(config: pytest.Config) -> list[str]:
    settings: Settings = config.stash[SETTINGS_KEY]
    from pytest_agentbench.sandbox import provider_for
    from pytest_agentbench.trial.process import agent_info

    provider = provider_for(config, settings)
    info = agent_info(config, settings)
    version = info.get("cli_version")
    agent = f"{settings.agent} ({version})" if version else settings.agent
    return [
        *concurrency_lines(config, settings),
        f"agentbench: agent {agent}, model {settings.model or 'default'}, "
        f"reasoning {settings.reasoning or 'default'}, sandbox {provider.kind}, "
        f"repeats {settings.repeats}, oracle recoveries {settings.oracle_recoveries}, "
        f"retry failures {settings.retry_failures}, seed {settings.seed}" + segments_text(settings),
        *pool_header(provider.describe()),
        *warning_lines(config),
        *untested_version_lines(settings, info),
    ]


def pool_header(sandbox: dict[str, Any]) -> list[str]:
    """The engines of a pool (--docker-host) with their slots, on one line."""
    engines = sandbox.get("engines")
    if not engines:
        return []
    listed = ", ".join(f"{e['name']} ({e['slots']} slots)" for e in engines)
    return [f"agentbench: docker engines {listed}"]


def untested_version_lines(settings: Settings, info: dict[str, Any]) -> list[str]:
    """A CLI other than the version this release is tested against, unpinned: said once."""
    from pytest_agentbench.agents.cli_base import version_matches

    version, tested = info.get("cli_version"), info.get("pinned_version")
    if not version or not tested or "version" in settings.agent_opts:
        return []
    if version_matches(version, tested):
        return []
    return [
        f"agentbench WARNING: {settings.agent} CLI {version!r} is not {tested}, the version "
        f"this release is tested against; pin the one you mean with --agent-opt version=X"
    ]


def concurrency_lines(config: pytest.Config, settings: Settings) -> list[str]:
    """How many trials run at once, when more than one does in a process, and what bounds it."""
    if settings.concurrency == 1:
        return []
    from pytest_agentbench.run.ahead import CAPACITY_KEY

    limit, bound = config.stash.get(CAPACITY_KEY, (settings.concurrency, None))
    where = "per worker" if getattr(config.option, "numprocesses", None) else "at once"
    line = f"agentbench: up to {limit} trials in flight {where}"
    if bound is not None:
        line += f" (--agentbench-concurrency {settings.concurrency}, bounded by {bound})"
    return [line]


def segments_text(settings: Settings) -> str:
    """', segments N (steered legs 2, 3)' for a segmented run; empty for one leg."""
    if settings.segments == 1:
        return ""
    steered = ", ".join(str(leg) for leg, _ in settings.steers)
    return f", segments {settings.segments}" + (f" (steered legs {steered})" if steered else "")
