"""Growth: the mock agent at 1x, 4x and 16x a suite (repeats 1, 4, 16). The cost of one more
trial, in time and in peak memory, must stay flat as the run grows.

The marginal cost per trial between 1x and 4x is compared with that between 4x and 16x
(start-up cancels out of both); peak RSS at 16x is compared with 1x. The verdict uses the
child's CPU time (user + system), which other work on a shared machine barely moves; the
wall times are in the JSON beside it.
"""

from __future__ import annotations

import statistics

from benchmarks.core import Benchmark, Context, Target, check
from benchmarks.procs import pytest_dir, run_pytest
from benchmarks.taskgen import make_tasks

SCALES = (1, 4, 16)


def run(ctx: Context) -> list[dict]:
    count = 25 if ctx.quick else 50
    tasks = make_tasks(ctx.scratch / "tasks", count)
    cwd = pytest_dir(ctx.scratch / "run")
    walls: dict[int, list[float]] = {scale: [] for scale in SCALES}
    cpus: dict[int, list[float]] = {scale: [] for scale in SCALES}
    rss: dict[int, list[float]] = {scale: [] for scale in SCALES}
    for _ in range(ctx.runs(3, 1)):
        for scale in SCALES:
            done = run_pytest(
                cwd, "--agent=mock", "--sandbox=tmp", f"--repeats={scale}", f"--tasks={tasks}"
            )
            walls[scale].append(done.wall_s)
            cpus[scale].append(done.cpu_s)
            rss[scale].append(done.max_rss_mb)
    cpu = {scale: statistics.median(values) for scale, values in cpus.items()}
    trials = {scale: count * scale for scale in SCALES}
    early = (cpu[4] - cpu[1]) / (trials[4] - trials[1]) * 1000
    late = (cpu[16] - cpu[4]) / (trials[16] - trials[4]) * 1000
    figures = {
        f"{scale}x": {
            "trials": trials[scale],
            "wall_s": walls[scale],
            "cpu_s": cpus[scale],
            "wall_ms_per_trial": round(statistics.median(walls[scale]) / trials[scale] * 1000, 3),
            "max_rss_mb": rss[scale],
        }
        for scale in SCALES
    }
    return [
        check(
            f"marginal CPU per trial, {trials[4]}->{trials[16]} vs {trials[1]}->{trials[4]} trials",
            unit="CPU ms/trial",
            value=[late],
            floor=[early],
            floor_is=f"the marginal cost per trial from {trials[1]} to {trials[4]} trials",
            target=Target("ratio", "<=", 1.5),
            note="medians of the child's CPU time at each scale; flat is a ratio near 1",
            scales=figures,
        ),
        check(
            f"peak RSS at {trials[16]} trials vs {trials[1]}",
            unit="MB",
            value=rss[16],
            floor=rss[1],
            floor_is=f"peak RSS of the {trials[1]}-trial run",
            target=Target("ratio", "<=", 1.5),
        ),
    ]


BENCHMARK = Benchmark("growth", "mock agent at 1x, 4x, 16x: cost per trial stays flat", run)
