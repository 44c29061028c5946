"""The code measures of a trial's change and of its task's reference change (docs/measures.md).

The reference is measured once per task and process: the input tree with the task's reference
laid over it (the expected tree, or solution/ overlaid, as the oracle writes it), diffed as a
trial's workspace is, so both sides of a ratio come from one path.
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

from pytest_agentbench.grading.coverage import COVERAGE_FIGURES, TaskTests, coverage_figures
from pytest_agentbench.grading.image_coverage import image_runner
from pytest_agentbench.grading.measures import (
    ChangeCut,
    file_sides,
    measure_change,
    parse_change,
    with_ratios,
)
from pytest_agentbench.sandbox.base import SandboxProvider
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.model import Task, materialize
from pytest_agentbench.trial.artifacts import workspace_diff

Figures = dict[str, int | None]

ReferenceKey = tuple[str, str, tuple[str, ...], int]
_REFERENCES: dict[ReferenceKey, Figures | None] = {}
# Trials run ahead on threads of their own, many of one task at once: one lock per reference,
# so the first measures it and the others wait for its figures instead of measuring it again.
_REFERENCE_LOCKS: dict[ReferenceKey, threading.Lock] = {}
_REFERENCES_LOCK = threading.Lock()  # guards the dict of locks


def trial_measures(
    task: Task, change: str | None, settings: Settings, provider: SandboxProvider | None
) -> tuple[dict[str, int | float | None], dict[str, str] | None]:
    """The asked measures of a trial's change with their ratios to the reference's, and why a
    measure's figures are None where a reason is known ({measure: reason}, None when none is);
    every figure None when the final workspace could not be read (change None). provider: the
    sandboxes' (a Docker one runs a task's tests in its image), None when there is none."""
    asked = settings.measure
    figures: dict[str, int | float | None] = dict(
        measure_change(task.input_tree, change, asked, task.test_paths)
    )
    notes = {}
    if "coverage" in asked:
        covered, why = task_coverage(task, change, provider)
        figures.update(covered)
        if why is not None:
            notes["coverage"] = why
    return with_ratios(figures, task_reference(task, change, settings)), notes or None


def task_reference(task: Task, change: str | None, settings: Settings) -> Figures | None:
    """The reference change's figures the ratios divide by (None: no reference, or no change
    to set beside it); gates read them for a ratio's floor."""
    if change is None:
        return None
    return reference_measures(task, settings.measure, settings.change_limit)


def task_coverage(
    task: Task, change: str | None, provider: SandboxProvider | None
) -> tuple[dict[str, int | float | None], str | None]:
    """Changed-line coverage of the change by the task's own test_command, run where its
    verifier runs (on this machine, or in the task's image through a Docker provider), and
    why it is None where it is."""
    unknown: dict[str, int | float | None] = dict.fromkeys(COVERAGE_FIGURES)
    if task.test_command is None:
        return unknown, "the task has no test_command"
    run_tests = None
    if task.container is not None:
        from pytest_agentbench.sandbox.docker import DockerProvider  # a container task's only

        if not isinstance(provider, DockerProvider):
            return unknown, "the task's tests run in its image, and no Docker engine is at hand"
        run_tests = image_runner(provider, task.container)
    if change is None:
        return unknown, "the final workspace could not be read"
    try:
        changes = parse_change(change)
    except ChangeCut:
        return unknown, "the change was cut at its size limit"
    sides = file_sides(task.input_tree, changes)
    timeout = task.verify_timeout or max(30.0, task.timeout)
    tests = TaskTests(task.test_command, timeout, task.verifier_env)
    return coverage_figures(task.input_tree, changes, sides, tests, task.test_paths, run_tests)


def reference_measures(task: Task, asked: tuple[str, ...], change_limit: int) -> Figures | None:
    """The asked measures of the task's reference change; None when the task has none that
    can be laid out here (no expected tree or solution/, a task of its own image)."""
    key = (task.source, task.fixture_hash, asked, change_limit)
    with _REFERENCES_LOCK:
        lock = _REFERENCE_LOCKS.setdefault(key, threading.Lock())
    with lock:
        if key not in _REFERENCES:
            _REFERENCES[key] = _measure_reference(task, asked, change_limit)
        return _REFERENCES[key]


def _measure_reference(task: Task, asked: tuple[str, ...], change_limit: int) -> Figures | None:
    if task.no_solution or task.container is not None:
        return None
    if task.make_expected is None and task.make_solution is None:
        return None
    with tempfile.TemporaryDirectory(prefix="agentbench-reference-") as root:
        workspace = Path(root) / "workspace"
        workspace.mkdir()
        materialize(task.input_tree, workspace)
        task.apply_reference(workspace)
        change = workspace_diff(
            task.input_tree, workspace, limit=change_limit, file_limit=change_limit
        )
    return measure_change(task.input_tree, change, asked, task.test_paths)
