"""`agentbench validate`: check that every selected task is sound."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_agentbench.commands import no_tasks
from pytest_agentbench.grading.validate import validate

HELP = (
    "check the selected tasks: pristine workspace fails, reference passes, fixture hash "
    "stable across two generations, expected tree differs from input; a no_solution task the "
    "other way round: pristine workspace passes; every cheats/<name>/ tree fails"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tasks",
        action="append",
        default=[],
        help="task source as for pytest --tasks (repeatable; default: the bundled selection)",
    )


def run(args: argparse.Namespace) -> int:
    checked = failed = 0
    for verdict in validate(tuple(args.tasks), Path.cwd()):
        checked += 1
        if verdict.ok:
            continue
        failed += 1
        for problem in verdict.problems:
            print(f"{verdict.task_id}\t{verdict.source}\t{problem}")
    if checked == 0:
        raise no_tasks(args.tasks)
    print(f"# {checked} tasks checked, {failed} unsound")
    return 1 if failed else 0
