"""`agentbench list`: every selected task with its category, tags and fixture hash."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_agentbench.tasks.catalog import iter_catalog
from pytest_agentbench.tasks.hashing import task_set_hash

HELP = "list the selected tasks (id, category, scale, variant, fixture hash) and the set hash"


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
        print(f"{task.id}\t{task.category or '-'}\t{scale}\t{variant}\t{task.fixture_hash}")
    print(f"# {len(hashes)} tasks, task-set hash {task_set_hash(hashes)}")
    return 1 if broken else 0
