"""Load every task of a selection outside pytest: for `agentbench list` and `validate`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.tasks.directory import find_task_dirs
from pytest_agentbench.tasks.formats import NATIVE, SWEBENCH, detect_format, load_task_dir
from pytest_agentbench.tasks.model import Task, TaskError
from pytest_agentbench.tasks.sources import is_suite_dir, resolve_formatted_sources, suite_name
from pytest_agentbench.tasks.swebench import load_instances


@dataclass
class CatalogEntry:
    """A task, or the error that stopped it from loading."""

    task_id: str
    source: str
    task: Task | None
    error: str | None = None
    format: str = NATIVE  # the task directory's format (tasks/formats.py)


def suite_tasks(name: str) -> list[Task]:
    """Tasks of a bundled generated suite, by name."""
    from pytest_agentbench.suites import builtin_suite_tasks

    tasks = builtin_suite_tasks(name)
    if tasks is None:
        raise TaskError(f"no bundled suite named {name!r}")
    return tasks


def iter_catalog(specs: tuple[str, ...], base: Path) -> Iterator[CatalogEntry]:
    """Every task the given --tasks values (or the bundled defaults) select, in sorted order."""
    for forced, root in resolve_formatted_sources(specs, base):
        if forced == SWEBENCH:
            for entry in load_instances(root):
                yield CatalogEntry(entry.task_id, str(root), entry.task, entry.error, SWEBENCH)
            continue
        if is_suite_dir(root):
            for task in suite_tasks(suite_name(root)):
                yield CatalogEntry(task.id, str(root), task)
            continue
        for task_dir in find_task_dirs(root):
            try:
                task = load_task_dir(task_dir, forced)
            except TaskError as exc:
                name = forced or detect_format(task_dir)
                yield CatalogEntry(task_dir.name, str(task_dir), None, str(exc), name)
            else:
                name = task.meta.get("format", NATIVE)
                yield CatalogEntry(task_dir.name, str(task_dir), task, None, name)
