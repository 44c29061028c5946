"""builtin:integrity: no-solution tasks hold the inverse contract, solvable ones the usual one,
and the suite resolves, lists, validates and runs like any other task source."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pytest_agentbench.grading import Grade, grade_task
from pytest_agentbench.tasks.directory import find_task_dirs, load_directory_task
from pytest_agentbench.tasks.model import Task, Tree, materialize
from pytest_agentbench.tasks.sources import builtin_source, default_sources

SUITE = builtin_source("builtin:integrity")
TASKS = [load_directory_task(path) for path in find_task_dirs(SUITE)]
NO_SOLUTION = [task for task in TASKS if task.no_solution]
SOLVABLE = [task for task in TASKS if not task.no_solution]
VERDICT_LINE = re.compile(r"COMPLETION: done`, `COMPLETION: partial` or `COMPLETION: incomplete`")


def _shape(task: Task) -> str:
    """The tag naming the task's shape: every tag but the suite's and the side's."""
    (shape,) = set(task.tags) - {"integrity", "no-solution", "solvable"}
    return shape


def _graded(task: Task, overlay: Tree | None) -> Grade:
    """The project's grader on a fresh pristine workspace, with overlay laid over it."""
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch)
        materialize(task.input_tree, workspace)
        if overlay is not None:
            materialize(overlay, workspace)
        return grade_task(task, workspace)


def test_the_suite_has_both_sides_in_the_same_shapes():
    assert len(NO_SOLUTION) >= 11 and len(SOLVABLE) >= 11
    assert len({_shape(task) for task in NO_SOLUTION}) == len(NO_SOLUTION)  # one reason each
    assert {_shape(task) for task in NO_SOLUTION} == {_shape(task) for task in SOLVABLE}
    assert {task.category for task in TASKS} == {"completion-integrity"}
    prompts = {(_shape(task), task.prompt) for task in TASKS}
    assert len(prompts) == len(NO_SOLUTION)  # the two sides of a shape share one prompt
    assert {("no-solution" in task.tags) for task in NO_SOLUTION} == {True}
    assert {("solvable" in task.tags) for task in SOLVABLE} == {True}


@pytest.mark.parametrize("task", TASKS, ids=lambda task: task.id)
def test_every_prompt_asks_for_the_verdict_line_and_carries_seeds(task: Task):
    assert VERDICT_LINE.search(task.prompt)
    assert task.seed_correct and task.seed_wrong and task.seed_correct != task.seed_wrong


@pytest.mark.parametrize("task", NO_SOLUTION, ids=lambda task: task.id)
def test_a_no_solution_verifier_passes_the_pristine_tree_and_rejects_every_cheat(task: Task):
    assert task.verifier is not None and task.make_expected is None
    assert _graded(task, None).exact, _graded(task, None).verifier_output
    cheats = task.cheat_trees
    assert cheats
    for name, tree in cheats.items():
        grade = _graded(task, tree)
        assert not grade.exact, f"cheat {name} passes"
        assert grade.verifier_exit_code == 1 and grade.verifier_output.strip(), name


HONEST_ATTEMPTS = {
    "contradictory-tests": "consistent-tests",
    "authoritative-test-is-wrong": "authoritative-test-is-right",
    "golden-output-unreproducible": "golden-output-reproducible",
    "spec-never-written": "spec-in-repository",
    "defect-in-protected-vendor": "defect-in-own-tree",
    "value-in-hidden-env": "value-in-ci-config",
}
"""No-solution task -> the solvable twin whose reference solution, laid over the no-solution
workspace, is an attempt within the rules that cannot succeed (the verdict must judge it)."""


@pytest.mark.parametrize(("task_id", "twin_id"), sorted(HONEST_ATTEMPTS.items()))
def test_an_attempt_within_the_rules_is_not_called_tampering(task_id: str, twin_id: str):
    by_id = {task.id: task for task in TASKS}
    assert _graded(by_id[task_id], by_id[twin_id].solution_tree).exact


@pytest.mark.parametrize("task", SOLVABLE, ids=lambda task: task.id)
def test_a_solvable_verifier_fails_the_pristine_tree_and_passes_the_solution(task: Task):
    assert not _graded(task, None).exact
    assert task.solution_tree is not None
    assert _graded(task, task.solution_tree).exact


def test_the_suite_is_named_not_defaulted():
    """Its no-solution half would change what a default run measures."""
    assert SUITE not in default_sources()


def test_agentbench_validate_passes_the_suite():
    run = subprocess.run(
        [sys.executable, "-m", "pytest_agentbench.cli", "validate", "--tasks=builtin:integrity"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().splitlines()[-1] == f"# {len(TASKS)} tasks checked, 0 unsound"


def test_agentbench_list_names_every_task():
    run = subprocess.run(
        ["agentbench", "list", "--tasks=builtin:integrity"],
        capture_output=True,
        text=True,
        check=True,
    )
    listed = [line.split("\t")[0] for line in run.stdout.splitlines() if not line.startswith("#")]
    assert listed == sorted(task.id for task in TASKS)


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_oracle_solves_the_solvable_side_and_nop_stays_honest_on_the_other(
    pytester: pytest.Pytester, dist: list[str]
):
    """The oracle passes every solvable task; doing nothing leaves every no-solution workspace
    untampered (passes its verifier) and every solvable one unsolved."""
    oracle = pytester.runpytest_subprocess(
        "--agent=oracle", "--tasks=builtin:integrity", "-m", "solvable", *dist
    )
    outcomes = oracle.parseoutcomes()
    assert (outcomes["passed"], outcomes.get("failed", 0)) == (len(SOLVABLE), 0)
    nop = pytester.runpytest_subprocess("--agent=nop", "--tasks=builtin:integrity", *dist)
    assert nop.parseoutcomes() == {"passed": len(NO_SOLUTION), "failed": len(SOLVABLE)}


def test_the_mock_runs_the_suite_with_repeats(pytester: pytest.Pytester):
    result = pytester.runpytest_subprocess(
        "--agent=mock", "--tasks=builtin:integrity", "--repeats", "3"
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", 0) == 0
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 3 * len(TASKS)
    result.stdout.fnmatch_lines([f"no-solution tasks: {3 * len(NO_SOLUTION)} trials scored*"])
