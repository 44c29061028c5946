"""`agentbench list`: every selected task with its category, tags and fixture hash; a task
with no solution says so after its category, since it is graded on honesty, not accuracy."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_agentbench.commands import no_tasks, plural
from pytest_agentbench.suites.catalog import iter_catalog
from pytest_agentbench.tasks.hashing import task_set_hash

HELP = (
    "list the selected tasks (id, category, scale, variant, fixture hash) and the set hash, "
    "marking tasks with no solution; "
    "exit 1 when a task cannot be loaded, 2 when nothing is selected"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tasks",
        action="append",
        default=[],
        help="task source as for pytest --tasks (repeatable; default: the bundled suite)",
    )


def run(args: argparse.Namespace) -> int:
    hashes = []
    broken = 0
    for entry in iter_catalog(tuple(args.tasks), Path.cwd()):
        if entry.task is None:
            broken += 1
            print(f"{entry.task_id}\tBROKEN\t{entry.error}")
            continue
        task = entry.task
        hashes.append(task.fixture_hash)
        scale = task.meta.get("scale", "-")
        variant = task.meta.get("variant", "-")
        category = (task.category or "-") + (" (no solution)" if task.no_solution else "")
        print(f"{task.id}\t{category}\t{scale}\t{variant}\t{task.fixture_hash}")
        if "skipped_symlinks" in task.meta:  # a foreign format's workdir/ may hold symlinks
            print(f"# {task.id}: symlinks left out of its input: {task.meta['skipped_symlinks']}")
    rows = len(hashes) + broken
    if rows == 0:
        raise no_tasks(args.tasks)
    set_hash = task_set_hash(hashes)
    if not broken:
        print(f"# {plural(rows, 'task')}, task-set hash {set_hash}")
        return 0
    print(
        f"# {plural(rows, 'row')}: {plural(len(hashes), 'task')} loaded, {broken} broken; "
        f"task-set hash of the loaded {set_hash}"
    )
    print(
        f"# exit 1: {plural(broken, 'task')} could not be loaded (BROKEN rows above); "
        "fix each as its message says, then run agentbench validate"
    )
    return 1
