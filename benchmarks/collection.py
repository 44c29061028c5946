"""Collection: the whole bundled suite x 5 repeats with ``--collect-only -q``, against a plain
parametrized test function with the same number of items. Whole-process wall, start-up in both.
"""

from __future__ import annotations

import re

from benchmarks.core import Benchmark, Context, Target, check
from benchmarks.procs import pytest_dir, run_pytest

REPEATS = 5
FLOOR_TEST = """
import pytest


@pytest.mark.parametrize("index", range({count}))
def test_item(index):
    pass
"""


def collected(output: str) -> int:
    found = re.search(r"(\d+) tests? collected", output)
    if found is None:
        raise RuntimeError(f"no 'N tests collected' line in:\n{output[-2000:]}")
    return int(found.group(1))


def measure_collection(ctx: Context, repeats: int) -> tuple[int, list[float], list[float]]:
    """Item count, and wall times of collecting the default selection vs the plain floor."""
    subject_dir = pytest_dir(ctx.scratch / f"subject-r{repeats}")
    args = ("--collect-only", "--agent=mock", f"--repeats={repeats}")
    count = collected(run_pytest(subject_dir, *args, ok=(0,)).output)
    floor_dir = pytest_dir(ctx.scratch / f"floor-r{repeats}")
    (floor_dir / "test_floor.py").write_text(FLOOR_TEST.format(count=count))
    subject, floor = [], []
    for _ in range(ctx.runs(5, 2)):
        subject.append(run_pytest(subject_dir, *args, ok=(0,)).wall_s)
        floor.append(run_pytest(floor_dir, "--collect-only", "test_floor.py", ok=(0,)).wall_s)
    return count, subject, floor


def collection_check(ctx: Context, repeats: int, title: str, note: str) -> dict:
    """The collection figure: the default selection at `repeats` against the plain floor."""
    count, subject, floor = measure_collection(ctx, repeats)
    return check(
        f"{title}: {count} items",
        unit="s",
        value=subject,
        floor=floor,
        paired=True,
        floor_is=f"one parametrized test function with {count} items, --collect-only -q",
        target=Target("ratio", "<=", 2.0),
        note=note,
        items=count,
    )


def run(ctx: Context) -> list[dict]:
    return [
        collection_check(
            ctx,
            REPEATS,
            f"bundled suite x {REPEATS} repeats",
            "the bundled suite is every default task source of this checkout",
        )
    ]


BENCHMARK = Benchmark("collection", "--collect-only of the bundled suite vs plain pytest", run)
