"""Bundled generated suites, offered through the pytest_agentbench_suite_tasks hook.

A bundled suite is a package under pytest_agentbench/suites/ holding an agentbench-suite.toml
(`name = "..."`, which makes `--tasks=builtin:NAME` and the default selection find it) and a
function `tasks() -> list[Task]` (sorted by id, trees built lazily); register it below. The
catalog lists every task a selection names, bundled or not, outside pytest (`agentbench list`
and `validate`). May import tasks/, fs/ and settings; never sandboxes or anything above.
"""

from __future__ import annotations

import pytest

from pytest_agentbench import hookimpl
from pytest_agentbench.tasks.model import Task

BUILTIN_SUITES: dict[str, str] = {"mechanical": "pytest_agentbench.suites.mechanical"}


def builtin_suite_tasks(name: str) -> list[Task] | None:
    """The tasks of a bundled suite, or None when no bundled suite has that name."""
    module_name = BUILTIN_SUITES.get(name)
    if module_name is None:
        return None
    import importlib

    module = importlib.import_module(module_name)
    tasks: list[Task] = module.tasks()
    return tasks


class BuiltinSuites:
    @hookimpl(trylast=True)
    def pytest_agentbench_suite_tasks(self, name: str, config: pytest.Config) -> list[Task] | None:
        return builtin_suite_tasks(name)
