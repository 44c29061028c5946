"""The listing behind `agentbench list`: every bundled generated task with its hash."""

from __future__ import annotations

from typing import TextIO

from pytest_agentbench.suites.mechanical import SUITE_NAME, SUITE_VERSION, specs
from pytest_agentbench.tasks.hashing import task_set_hash

COLUMNS = ("id", "category", "scale", "variant", "fixture_hash")


def catalog_rows() -> list[tuple[str, str, str, str, str]]:
    """One row per task; builds each task once to hash it, then drops its trees."""
    return [(s.id, s.category, s.scale, s.variant, s.build().fixture_hash()) for s in specs()]


def print_catalog(out: TextIO) -> str:
    """Write the tab-separated listing and the task-set hash; return the task-set hash."""
    rows = catalog_rows()
    out.write("\t".join(COLUMNS) + "\n")
    for row in rows:
        out.write("\t".join(row) + "\n")
    digest = task_set_hash(row[-1] for row in rows)
    out.write(f"# builtin:{SUITE_NAME} version {SUITE_VERSION}: {len(rows)} tasks, ")
    out.write(f"task-set {digest}\n")
    return digest
