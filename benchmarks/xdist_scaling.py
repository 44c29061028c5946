"""xdist scaling: a command agent that sleeps 0.5 s on 40 trials, ``-n 2`` against ``-n 0``.

The agent's time dominates, so two workers should nearly halve the wall time; whatever the
harness adds per worker (start-up, collection, relaying reports) eats into the speed-up.
Both runs write a JSON report, whose metrics must be identical.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.core import Benchmark, Context, Target, check
from benchmarks.procs import pytest_dir, run_pytest
from benchmarks.taskgen import make_tasks

TASKS, REPEATS, SLEEP = 10, 4, 0.5
TIMING_KEYS = {"wall_s", "wall_s_cv"}  # the only figures that honestly differ between two runs


def metrics(path: Path) -> dict[str, Any]:
    """The report's summary and per-task figures, without measured wall times."""
    report = json.loads(path.read_text())
    summary = {k: v for k, v in report["summary"].items() if k not in TIMING_KEYS}
    tasks = [{k: v for k, v in row.items() if k not in TIMING_KEYS} for row in report["tasks"]]
    return {"summary": summary, "tasks": tasks}


def run(ctx: Context) -> list[dict]:
    tasks = make_tasks(ctx.scratch / "tasks", TASKS, change=False)
    cwd = pytest_dir(ctx.scratch / "run")
    common = (
        "--agent=command",
        "--sandbox=tmp",
        f"--agent-cmd=sleep {SLEEP}",
        f"--repeats={REPEATS}",
        f"--tasks={tasks}",
    )
    serial, parallel = [], []
    same = True
    for attempt in range(ctx.runs(2, 1)):
        serial.append(
            run_pytest(cwd, *common, "-n", "0", f"--agentbench-json=s{attempt}.json").wall_s
        )
        parallel.append(
            run_pytest(cwd, *common, "-n", "2", f"--agentbench-json=p{attempt}.json").wall_s
        )
        same = same and metrics(cwd / f"s{attempt}.json") == metrics(cwd / f"p{attempt}.json")
    trials = TASKS * REPEATS
    return [
        check(
            f"-n 2 speed-up, {trials} trials of sleep {SLEEP}",
            unit="s",
            value=parallel,
            floor=serial,
            paired=True,
            floor_is="the same run with -n 0",
            ratio="floor/value",
            target=Target("ratio", ">=", 1.8),
            note=f"ideal is 2.0; the agent alone sleeps {trials * SLEEP:g} s in total",
        ),
        check(
            "JSON metrics identical under -n 2",
            unit="identical (1 = yes)",
            value=[1.0 if same else 0.0],
            target=Target("value", ">=", 1),
            note="summary and per-task figures of the JSON reports, wall times aside",
        ),
    ]


BENCHMARK = Benchmark("xdist_scaling", "-n 2 against -n 0 for a 0.5 s command agent", run)
