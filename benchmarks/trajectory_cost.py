"""What keeping trajectories costs a trial: the same run with --agentbench-trajectories on
(the default: raw evidence compressed, the trajectory built, trajectory.json and its figures
written) and off, measured alternately in one run, pytest start-up in both halves.

Three subjects, from the realistic to the worst case:
- the offline benchmark's trials (figure 2): the oracle on rerun-bench's own ten tasks, each
  graded by its verify.py, 5 repeats, serial. Target: at most 5 % more per trial.
- the command agent printing 200 JSON event lines a round: a trial with a stream to keep.
- the bare per-trial overhead of figure 1 (`--agent-cmd=true`, 300 tiny trials) and the mock
  agent: trials of a few milliseconds in all, where the two files every trial writes show in
  full. Their target is looser, and says so.
"""

from __future__ import annotations

from benchmarks.core import Benchmark, Context, Target, check
from benchmarks.offline_agents import find_peer
from benchmarks.procs import pytest_dir, run_pytest
from benchmarks.taskgen import make_tasks

EVENTS = (
    "python3 -c \"import json; [print(json.dumps({'type': 'item.completed', 'n': i, "
    "'text': 'x' * 80})) for i in range(200)]\""
)
TIGHT = Target("ratio", "<=", 1.05)
LOOSE = Target("ratio", "<=", 1.3)


def run(ctx: Context) -> list[dict]:
    count = 300
    tasks = make_tasks(ctx.scratch / "tasks", count, change=False)
    peer = find_peer()
    tiny = ("--sandbox=tmp", f"--tasks={tasks}")
    subjects = {
        "oracle on rerun-bench's 10 tasks x 5, serial": (
            ("--agent=oracle", "--sandbox=tmp", "--repeats=5", f"--tasks=rerun:{peer.tasks_dir}"),
            50,
            TIGHT,
        ),
        f"command agent, 200 event lines a round, {count} trials": (
            (f"--agent-cmd={EVENTS}", "--agent=command", *tiny),
            count,
            TIGHT,
        ),
        f"command agent, --agent-cmd=true, {count} tiny trials": (
            ("--agent-cmd=true", "--agent=command", *tiny),
            count,
            LOOSE,
        ),
        f"mock agent, {count} trials": (
            ("--agent=mock", "--agent-opt=pass_prob=1", *tiny),
            count,
            LOOSE,
        ),
    }
    checks = []
    for index, (name, (args, trials, target)) in enumerate(subjects.items()):
        workdir = pytest_dir(ctx.scratch / f"subject-{index}")
        kept, skipped = [], []
        for _ in range(ctx.runs(7, 2)):
            on = run_pytest(workdir, *args, "--agentbench-trajectories=on", ok=(0,))
            off = run_pytest(workdir, *args, "--agentbench-trajectories=off", ok=(0,))
            kept.append(on.wall_s / trials * 1000)
            skipped.append(off.wall_s / trials * 1000)
        checks.append(
            check(
                name,
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
