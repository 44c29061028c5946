"""The default implementation of pytest_agentbench_grade: exact tree or verifier."""

from __future__ import annotations

from pathlib import Path

from pytest_agentbench import hookimpl
from pytest_agentbench.grading import Grade, grade_task
from pytest_agentbench.tasks.model import Task


class DefaultGrader:
    @hookimpl(trylast=True)
    def pytest_agentbench_grade(self, task: Task, workspace: Path) -> Grade:
        return grade_task(task, workspace)
