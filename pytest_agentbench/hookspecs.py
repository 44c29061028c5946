"""Every pytest_agentbench_* hook, declared once. Implement them in a conftest.py or plugin."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import pytest

    from pytest_agentbench.agents.base import Agent
    from pytest_agentbench.grading.grade import Grade
    from pytest_agentbench.settings import Settings
    from pytest_agentbench.tasks.model import Task

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_agentbench_agent_names() -> list[str]:
    """Names of the agents this plugin can make, for --help and usage errors.

    :return: a list of agent names, e.g. ``["my-agent"]``.
    """


@hookspec(firstresult=True)
def pytest_agentbench_make_agent(
    name: str, settings: Settings, config: pytest.Config
) -> Agent | None:
    """Make the agent called ``name``, or return None when it is not yours.

    :param name: the value of ``--agent``.
    :param settings: the run's validated settings (model, options, ...).
    :return: an :class:`pytest_agentbench.agents.base.Agent`.

    Example conftest.py::

        from pytest_agentbench.agents.command import CommandAgent

        def pytest_agentbench_make_agent(name, settings, config):
            if name == "my-agent":
                return CommandAgent(dataclasses.replace(settings, agent_cmd="my-agent --yes"))
    """


@hookspec(firstresult=True)
def pytest_agentbench_grade(task: Task, workspace: Path) -> Grade | None:
    """Grade the final workspace of one round; the first non-None result wins.

    :param task: the task being graded (its expected tree or verifier).
    :param workspace: host path of the workspace after the agent's round.
    :return: a :class:`pytest_agentbench.grading.grade.Grade`.

    The default is the exact-tree grader (or the task's verifier). Example conftest.py::

        from pytest_agentbench.grading.grade import Grade

        def pytest_agentbench_grade(task, workspace):
            if task.category == "docs":
                ok = (workspace / "README.md").exists()
                return Grade(exact=ok, eof_normalized=ok)
    """


@hookspec(firstresult=True)
def pytest_agentbench_suite_tasks(name: str, config: pytest.Config) -> list[Task] | None:
    """The tasks of the generated suite ``builtin:NAME``, or None when it is not yours.

    :param name: the part after ``builtin:`` in ``--tasks``.
    :return: a list of :class:`pytest_agentbench.tasks.model.Task`, sorted by id.
    """


@hookspec
def pytest_agentbench_report_json(config: pytest.Config, report: dict[str, Any]) -> None:
    """Update the JSON report in place just before it is written.

    :param report: the report dict (``schema_version``, ``run``, ``summary``, ``tasks``,
        ``observations``).

    Example conftest.py::

        def pytest_agentbench_report_json(config, report):
            report["run"]["label"] = "nightly"
    """
