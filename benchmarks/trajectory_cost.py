"""What keeping trajectories costs a trial: the same run with --agentbench-trajectories on
(the default: raw evidence compressed, the trajectory built, trajectory.json and its figures
written) and off, measured alternately in one run.

The target is on the per-trial overhead of figure 1 (trial_overhead): the command agent, here
printing 200 JSON event lines a round (what the trajectory keeps from a command is its stdout).
The mock agent's trial costs a few milliseconds in all, so the two files written show: its
target is looser and says so. Per-trial wall time, pytest start-up in both halves.
"""

from __future__ import annotations

from benchmarks.core import Benchmark, Context, Target, check
from benchmarks.procs import pytest_dir, run_pytest
from benchmarks.taskgen import make_tasks

EVENTS = (
    "python3 -c \"import json; [print(json.dumps({'type': 'item.completed', 'n': i, "
    "'text': 'x' * 80})) for i in range(200)]\""
)


def run(ctx: Context) -> list[dict]:
    count = 300
    tasks = make_tasks(ctx.scratch / "tasks", count, change=False)
    subjects = {
        "command agent, 200 event lines a round": (
            (f"--agent-cmd={EVENTS}", "--agent=command"),
            Target("ratio", "<=", 1.05),
        ),
        "mock agent": (("--agent=mock", "--agent-opt=pass_prob=1"), Target("ratio", "<=", 1.25)),
    }
    checks = []
    for name, (agent, target) in subjects.items():
        workdir = pytest_dir(ctx.scratch / name.split()[0])
        args = (*agent, "--sandbox=tmp", f"--tasks={tasks}")
        kept, skipped = [], []
        for _ in range(ctx.runs(7, 2)):
            on = run_pytest(workdir, *args, "--agentbench-trajectories=on", ok=(0,))
            off = run_pytest(workdir, *args, "--agentbench-trajectories=off", ok=(0,))
            kept.append(on.wall_s / count * 1000)
            skipped.append(off.wall_s / count * 1000)
        checks.append(
            check(
                f"{name}, {count} trials",
                unit="ms/trial",
                value=kept,
                floor=skipped,
                paired=True,
                floor_is="the same run with --agentbench-trajectories=off",
                target=target,
                note="whole-process wall divided by trials; pytest start-up is in both",
            )
        )
    return checks


BENCHMARK = Benchmark(
    "trajectory_cost", "what keeping trajectories adds to a trial (on vs off)", run
)
