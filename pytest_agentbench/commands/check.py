"""`agentbench check PYTEST-ARGS` (pytest --agentbench-check): everything a study needs that
needs no model call to know, all of it at once.

A run stops at the first usage error, which is right for a run and slow for a study: fixing
one problem to meet the next costs a start each time. The check takes each part on its own --
the options, the agent (its CLI found, its version, its credentials), the sandbox (the engine
and image ready), the arms file and what the agent can receive of it, and every selected task
as `agentbench validate` checks it -- and prints one line per problem, so a broken study shows
every problem in one go. Nothing is started and no directory is written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_agentbench.fs.wording import plural

HELP = (
    "check a study before it runs, with no model call: options, agent CLI and credentials, "
    "sandbox and image, arms, and every task as validate checks it; one line per problem"
)
T = TypeVar("T")
READY, NOT_READY = 0, 1


PYTEST_ARGS = "the study's pytest arguments, as for its run: --agent, --tasks, --arms, --sandbox..."
"""The command takes every argument it does not know as pytest's (cli.py)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = f"PYTEST-ARGS: {PYTEST_ARGS}"


def run(args: argparse.Namespace) -> int:
    return int(pytest.main([*args.pytest_args, "--agentbench-check", "-p", "no:cacheprovider"]))


class Problems:
    """The problems found, each as one line `PART: what is wrong, and the fix`."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def step(self, part: str, check: Callable[[], T]) -> T | None:
        """CHECK's result, or None with its usage error kept as a problem of PART."""
        try:
            return check()
        except pytest.UsageError as exc:
            self.add(part, str(exc))
        return None

    def add(self, part: str, text: str) -> None:
        self.lines.append(f"{part}: {' '.join(text.split())}")


def check(config: pytest.Config) -> int:
    """Check the study the command line describes; READY only when nothing is wrong."""
    from pytest_agentbench.options import arms_path, settings_from_config

    problems = Problems()
    settings = problems.step("options", lambda: settings_from_config(config))
    if settings is None:
        if not problems.lines:
            problems.add("options", "give --agent (or --agentbench-resume RUN_DIR): what to check")
        return _finish(problems, [], [])
    from pytest_agentbench.agents import BuiltinAgents
    from pytest_agentbench.header import untested_version_lines
    from pytest_agentbench.sandbox import provider_for
    from pytest_agentbench.trial.process import process_agent

    config.pluginmanager.register(BuiltinAgents(), "agentbench-builtin-agents")
    found: list[str] = []
    provider = problems.step("sandbox", lambda: provider_for(config, settings))
    if provider is not None:
        found.append(f"sandbox {provider.describe().get('kind', settings.sandbox)}")
    arms = None
    if (arms_file := arms_path(config)) is not None:
        from pytest_agentbench.plan.arm_trials import configure_arms

        arms = problems.step("arms", lambda: configure_arms(config, arms_file))
        if arms is not None:
            found.append(f"arms {', '.join(arm.name for arm in arms)}")
    agent = None
    if provider is not None:
        agent = problems.step("agent", lambda: _agent(config, settings, process_agent))
    notes: list[str] = []
    if agent is not None:
        info = agent.info()
        version = info.get("cli_version")
        found.insert(0, f"agent {settings.agent}" + (f" (CLI {version})" if version else ""))
        notes += [
            f"note: {line.split(': ', 1)[1]}" for line in untested_version_lines(settings, info)
        ]
        if arms is not None:
            from pytest_agentbench.agents.base import check_delivery

            problems.step("arms", lambda: check_delivery(agent, arms))
    found.append(_tasks(problems, settings.tasks, Path(config.invocation_params.dir)))
    return _finish(problems, found, notes)


def _agent(config: pytest.Config, settings: Any, process_agent: Callable[..., Any]) -> Any:
    from pytest_agentbench.trial.process import unknown_agent

    names = {n for names in config.hook.pytest_agentbench_agent_names() for n in names}
    if settings.agent not in names:
        raise unknown_agent(config, settings.agent)
    return process_agent(config, settings)  # its CLI found, its credentials set


def _tasks(problems: Problems, sources: tuple[str, ...], base: Path) -> str:
    """Every selected task as `agentbench validate` checks it; what was checked, in words."""
    from pytest_agentbench.grading.validate import validate

    checked = 0
    try:
        for verdict in validate(sources, base):
            checked += 1
            for problem in verdict.problems:
                problems.add(f"task {verdict.task_id}", f"{problem} ({verdict.source})")
    except (pytest.UsageError, ValueError, OSError) as exc:
        problems.add("tasks", str(exc))
    if checked == 0 and not any(line.startswith("tasks:") for line in problems.lines):
        problems.add("tasks", "the selection holds no task: check --tasks")
    return f"{checked} tasks"


def _finish(problems: Problems, found: list[str], notes: list[str]) -> int:
    for line in [*problems.lines, *notes]:
        sys.stdout.write(f"{line}\n")
    if problems.lines:
        sys.stdout.write(f"# not ready: {plural(len(problems.lines), 'problem')}\n")
        return NOT_READY
    sys.stdout.write(f"# ready: {', '.join(found)}\n")
    return READY
