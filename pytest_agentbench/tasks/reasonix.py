"""Reasonix e2ebench tasks as they are: task.toml, verify.sh and an optional workdir/.

verify.sh runs under bash with ``set -e`` (``bash -e verify.sh``) in a copy of the finished
work directory, as this project's verifiers run. ``class`` becomes the task's category,
``no_solution`` and the seeds keep their meaning here, ``max_steps`` is recorded in the task's
meta. Symlinks in workdir/ are skipped (the format allows them, this harness's trees do not)
and named in the task's meta. A solution/ tree, when present, is laid over workdir/ for the
oracle and ``agentbench validate``.
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_agentbench.tasks.directory import (
    field,
    flag,
    known_keys_only,
    read_toml,
    required_prompt,
)
from pytest_agentbench.tasks.model import DirTree, MemoryTree, Task, TaskError, Tree

TASK_FILE = "task.toml"
VERIFIER = "verify.sh"
DEFAULT_TIMEOUT = 240
KNOWN_KEYS = frozenset(
    {"prompt", "class", "max_steps", "timeout_sec", "no_solution", "seed_correct", "seed_wrong"}
)


def load_reasonix_task(task_dir: Path) -> Task:
    """Load one Reasonix e2ebench task directory; raise TaskError naming the file and the fix."""
    task_dir = Path(os.path.abspath(task_dir))
    toml_path = task_dir / TASK_FILE
    data = read_toml(toml_path)
    known_keys_only(data, KNOWN_KEYS, toml_path, "a Reasonix task reads")
    prompt = required_prompt(data, toml_path)
    texts = {
        key: field(data, key, str, toml_path, "a string") if key in data else None
        for key in ("class", "seed_correct", "seed_wrong")
    }
    numbers: dict[str, int | None] = {}
    for key in ("max_steps", "timeout_sec"):
        value = field(data, key, int, toml_path, "a positive integer") if key in data else None
        if key == "timeout_sec" and value == 0:
            value = None  # Reasonix: 0 means the default, as when it is omitted
        if isinstance(value, int) and value <= 0:
            raise TaskError(f"{toml_path}: field {key!r} must be a positive integer, got {value}")
        numbers[key] = value if isinstance(value, int) else None
    no_solution = "no_solution" in data and flag(data, "no_solution", toml_path)
    verifier = task_dir / VERIFIER
    if not verifier.is_file():
        raise TaskError(f"{verifier}: missing; a Reasonix task is graded by its verify.sh")
    skipped: list[str] = []
    input_tree = _tree(task_dir / "workdir", skipped)
    solution_dir = task_dir / "solution"
    solution_tree = _tree(solution_dir, skipped) if solution_dir.is_dir() else None
    if no_solution and solution_tree is not None:
        raise TaskError(
            f"{task_dir}: no_solution = true in {TASK_FILE}, but the task has solution/; "
            "remove solution/ or the flag"
        )
    meta = {"format": "reasonix"}
    if numbers["max_steps"] is not None:
        meta["max_steps"] = str(numbers["max_steps"])
    if skipped:
        meta["skipped_symlinks"] = ", ".join(sorted(skipped))
    return Task(
        id=task_dir.name,
        prompt=prompt,
        source=str(task_dir),
        make_input=lambda: input_tree,
        verifier=verifier.resolve(),
        verifier_command=("bash", "-e"),
        make_solution=(lambda: solution_tree) if solution_tree is not None else None,
        timeout=float(numbers["timeout_sec"] or DEFAULT_TIMEOUT),
        category=texts["class"] or "",
        no_solution=no_solution,
        seed_correct=texts["seed_correct"],
        seed_wrong=texts["seed_wrong"],
        meta=meta,
    )


def _tree(root: Path, skipped: list[str]) -> Tree:
    """The tree under root without its symlinks (each named in skipped); empty when absent."""
    if not root.is_dir():
        return MemoryTree({})

    def skip(entry: os.DirEntry[str]) -> bool:
        if entry.is_symlink():
            skipped.append(os.path.relpath(entry.path, root.parent))
            return True
        return False

    tree = DirTree(root, skip=skip)
    tree.paths()  # lists it now, so skipped is complete; raises TaskError on a special file
    return tree
