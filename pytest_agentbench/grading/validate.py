"""Soundness checks for any task source, behind `agentbench validate`.

A sound task needs a change (expected tree differs from the input), is failed by a
pristine workspace, is passed by its reference (expected tree or solution), and has
a fixture hash that the same code reproduces in another process. A no_solution task is
checked the other way round: its pristine workspace passes. Every cheat tree of a task
(cheats/<name>/, laid over the pristine workspace) must fail.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_agentbench.grading.grade import Grade
from pytest_agentbench.grading.hook import grade_task
from pytest_agentbench.suites.catalog import CatalogEntry, iter_catalog
from pytest_agentbench.tasks.directory import KNOWN_ENTRIES, is_task_dir, unknown_entries
from pytest_agentbench.tasks.formats import NATIVE
from pytest_agentbench.tasks.model import Task, TaskError, Tree, as_mapping, materialize
from pytest_agentbench.tasks.sources import resolve_sources

if TYPE_CHECKING:
    from pytest_agentbench.sandbox.task_image import TaskImageProvider


@dataclass
class Verdict:
    task_id: str
    source: str
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _story(grade: Grade) -> str:
    parts = [
        f"{name} {', '.join(paths[:5])}"
        for name, paths in (
            ("differing", grade.differing),
            ("missing", grade.missing),
            ("unexpected", grade.unexpected),
            ("invalid", grade.invalid),
        )
        if paths
    ]
    if grade.verifier_exit_code is not None:
        parts.append(f"verifier exit {grade.verifier_exit_code}")
    return "; ".join(parts) or "no detail"


def _graded_workspace(
    task: Task, scratch: Path, name: str, reference: bool, over: Tree | None = None
) -> Grade:
    """The grade of the pristine workspace, with the reference applied or a tree laid over it."""
    workspace = scratch / name
    workspace.mkdir()
    materialize(task.input_tree, workspace)
    if reference:
        task.apply_reference(workspace)
    if over is not None:
        materialize(over, workspace)
    return grade_task(task, workspace)


def check_task(task: Task, other_process_hash: str | None) -> list[str]:
    """Problems of one task; empty when it is sound."""
    problems = []
    expected = task.expected_tree
    if expected is not None:
        source = task.input_tree
        same_files = as_mapping(expected) == as_mapping(source)
        if same_files and expected.empty_dirs() == source.empty_dirs():
            problems.append("the expected tree equals the input tree: the task needs no change")
    elif task.solution_tree is None and not task.no_solution and task.container is None:
        problems.append("a verifier task without solution/: its reference cannot be checked")
    if (task.seed_wrong is None) != (task.seed_correct is None):
        given, lacking = (
            ("seed_wrong", "seed_correct")
            if task.seed_wrong is not None
            else ("seed_correct", "seed_wrong")
        )
        problems.append(
            f"{given} without {lacking}: the task would be scored in one anchor arm and skipped "
            "in the other (author both seeds or neither)"
        )
    content = task.content_hash()
    if task.known_fixture_hash is not None and task.known_fixture_hash != content:
        problems.append(
            f"recorded fixture hash {task.known_fixture_hash[:12]} differs from the content's "
            f"{content[:12]} (regenerate the source's recorded hashes)"
        )
    if other_process_hash is None:
        problems.append("another process did not generate this task")
    elif other_process_hash != content:
        problems.append("the fixture hash differs between two generations")
    if task.container is not None:
        problems.extend(_container_problems(task))
        return problems
    with tempfile.TemporaryDirectory(prefix="agentbench-validate-") as tmp:
        scratch = Path(tmp)
        pristine = _graded_workspace(task, scratch, "pristine", reference=False)
        if pristine.exact and not task.no_solution:
            problems.append("the pristine workspace passes: the task tests nothing")
        if task.no_solution and not pristine.exact:
            problems.append(
                "the pristine workspace fails, yet the task has no solution: its verifier must "
                f"pass the untouched workspace and fail only tampering ({_story(pristine)})"
            )
        if expected is not None or task.solution_tree is not None:
            grade = _graded_workspace(task, scratch, "reference", reference=True)
            if not grade.exact:
                problems.append(f"the reference result fails: {_story(grade)}")
        for name, cheat in task.cheat_trees.items():
            if _graded_workspace(task, scratch, f"cheat-{name}", reference=False, over=cheat).exact:
                problems.append(f"the cheat {name!r} passes: the grader does not catch it")
    if task.no_solution and not task.cheat_trees and "format" not in task.meta:
        problems.append(
            "a no_solution task without cheats/<name>/: nothing shows its verifier "
            "catches tampering (add at least one tampered result)"
        )
    return problems


def _container_problems(task: Task) -> list[str]:
    """A Harbor task or SWE-bench instance, checked in its image: the untouched working
    directory fails its tests, and solve.sh (the instance's patch) applied there passes them."""
    from pytest_agentbench.sandbox.docker import DockerSandbox
    from pytest_agentbench.sandbox.task_image import apply_instance_patch, run_solution

    assert task.container is not None
    problems = []
    provider = _docker_provider()
    try:
        with provider.create(task, f"validate-{task.id}-pristine") as sandbox:
            pristine = grade_task(task, sandbox.workspace)
        if pristine.exact:
            problems.append("the pristine workspace passes: the task tests nothing")
        instance = task.container.instance is not None
        if task.container.solution is None and not instance:
            problems.append(
                "a Harbor task without solution/solve.sh: its reference cannot be checked"
            )
            return problems
        with provider.create(task, f"validate-{task.id}-reference") as sandbox:
            assert isinstance(sandbox, DockerSandbox)  # what a Harbor task always gets
            apply = apply_instance_patch if instance else run_solution
            solved = apply(sandbox, task, task.timeout)
            grade = grade_task(task, sandbox.workspace)
    except TaskError as exc:
        return [*problems, str(exc)]
    if solved.exit_code != 0:
        what = "git apply of its patch" if instance else "solve.sh"
        problems.append(f"the reference result fails: {what} exit {solved.exit_code}")
    elif not grade.exact:
        first = grade.verifier_output.splitlines()[:1]
        problems.append(f"the reference result fails: {first[0] if first else _story(grade)}")
    return problems


@functools.cache
def _docker_provider() -> TaskImageProvider:
    """One Docker provider for the whole validation (Harbor tasks run in their images)."""
    from pytest_agentbench.sandbox.task_image import TaskImageProvider
    from pytest_agentbench.settings import SandboxLimits

    return TaskImageProvider(SandboxLimits(), None)


def content_hashes(specs: tuple[str, ...], base: Path) -> dict[str, str]:
    """(source, task id) -> content hash, for every loadable task of the selection."""
    return {
        f"{entry.source}\t{entry.task_id}": entry.task.content_hash()
        for entry in iter_catalog(specs, base)
        if entry.task is not None
    }


def hashes_in_another_process(specs: tuple[str, ...], base: Path) -> dict[str, str]:
    """The same hashes generated by a fresh interpreter with another hash seed."""
    env = {**os.environ, "PYTHONHASHSEED": "271828"}
    argv = [sys.executable, "-m", "pytest_agentbench.grading.validate", str(base), *specs]
    run = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise ValueError(f"second generation failed: {run.stderr.strip()[-2000:]}")
    hashes: dict[str, str] = json.loads(run.stdout)
    return hashes


def validate(specs: tuple[str, ...], base: Path) -> Iterator[Verdict]:
    """A verdict per task of the selection (broken tasks included), in catalog order."""
    resolve_sources(specs, base)  # a bad source is a usage error here, not the second process's
    again = hashes_in_another_process(specs, base)
    entry: CatalogEntry
    for entry in iter_catalog(specs, base):
        verdict = Verdict(entry.task_id, entry.source)
        if entry.format == NATIVE and is_task_dir(Path(entry.source)):
            verdict.problems.extend(
                f"unknown entry {name!r} in the task directory (it holds only "
                f"{', '.join(sorted(KNOWN_ENTRIES))}); remove it, or move it into workspace/"
                for name in unknown_entries(Path(entry.source))
            )
        if entry.task is None:
            verdict.problems.append(f"does not load: {entry.error}")
        else:
            key = f"{entry.source}\t{entry.task_id}"
            verdict.problems.extend(check_task(entry.task, again.get(key)))
        yield verdict


if __name__ == "__main__":  # the second generation: python -m ... BASE [TASKS...]
    print(json.dumps(content_hashes(tuple(sys.argv[2:]), Path(sys.argv[1]))))
