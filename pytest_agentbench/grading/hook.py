"""The default grader, and the default implementation of pytest_agentbench_grade: the exact
tree, the task's verifier on a copy of the workspace, or a reward task's tests in its
container."""

from __future__ import annotations

import tempfile
from pathlib import Path

from pytest_agentbench import hookimpl
from pytest_agentbench.fs import fdtree, names
from pytest_agentbench.fs.filework import remove_later
from pytest_agentbench.grading.grade import Grade, compare_tree, list_workspace, run_verifier
from pytest_agentbench.grading.reward import grade_in_container
from pytest_agentbench.sandbox.ownership import owned_dir
from pytest_agentbench.tasks.model import Task, TaskError


class DefaultGrader:
    @hookimpl(trylast=True)
    def pytest_agentbench_grade(self, task: Task, workspace: Path) -> Grade:
        return grade_task(task, workspace)


def grade_task(task: Task, workspace: Path) -> Grade:
    """The default grader: exact tree comparison, or the task's verifier on a copy.

    Only a verifier needs scratch space, so only verifier tasks pay for a temp directory.
    """
    if task.container is not None:
        return _grade_in_container(task, workspace)
    expected = task.expected_tree
    if expected is not None:
        return compare_tree(expected, workspace)
    assert task.verifier is not None
    # In this process's owner directory, so a killed run's copy is swept like its trials; the
    # verifier may leave anything in it, so it goes the way trial directories go.
    scratch = tempfile.mkdtemp(prefix="agentbench-grade-", dir=owned_dir())
    try:
        copy = Path(scratch) / "verify-copy"
        left_out = fdtree.copy_tree(str(workspace), str(copy))
        invalid = sorted({*list_workspace(copy).invalid, *map(names.encode, left_out)})
        timeout = task.verify_timeout or max(30.0, task.timeout)
        grade = run_verifier(task.verifier, copy, timeout, task.verifier_command, task.verifier_env)
    finally:
        remove_later(Path(scratch))
    if invalid:
        grade.exact = grade.eof_normalized = False
        grade.invalid = invalid
    return grade


def _grade_in_container(task: Task, workspace: Path) -> Grade:
    """A task whose verifier runs inside its image (Harbor), on the trial's own container."""
    from pytest_agentbench.sandbox.docker import sandbox_of  # only such a task loads Docker's

    sandbox = sandbox_of(workspace)
    if sandbox is None:
        raise TaskError(
            f"{task.source}: a Harbor or SWE-bench task is graded inside its container; run it "
            "with --sandbox=docker"
        )
    if task.container is not None and task.container.instance is not None:
        from pytest_agentbench.grading.swebench import grade_instance

        return grade_instance(sandbox, task)
    return grade_in_container(sandbox, task)
