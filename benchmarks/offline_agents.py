"""Offline agents on equal work: this harness against rerun-bench on rerun-bench's own tasks.

Both harnesses run the ten tasks bundled with the pinned peer (rerun-bench 0.3.0, from the venv
``.ci/install-peer.sh`` makes), each trial graded by the task's own ``verify.py``, with the same
trials in every mode:

- agents: ``--agent=oracle`` against the peer's mock with ``pass_prob=1`` (both lay the task's
  ``solution/`` over the workspace: every trial passes), ``--agent=nop`` against the mock with
  ``pass_prob=0 wrong_edit_prob=0`` (both leave the workspace as it was: every trial fails);
- modes: serial (``-n 0`` / ``--jobs 1``) and parallel (``-n 2`` / ``--jobs 2``), the same
  repeats (``--repeats`` / ``--runs``) in both;
- one interpreter: the peer's pinned package runs under this Python, as ``benchmarks.peer``
  says why.

Each run's trials and passes are read back from each harness's own record (our
``observations.jsonl``, the peer's ``runs.jsonl``) and must match the plan, task by task, on
both sides: otherwise the benchmark refuses to report. Whole-process wall time and CPU time
(the process and every child it waited for), start-up and the end-of-run summary included;
the two harnesses alternate which goes first.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks import peer as peer_side
from benchmarks.core import Benchmark, Context, Target, check
from benchmarks.peer import PEER, Peer, Plan, Tally, equal_work, find_peer
from benchmarks.procs import Run, pytest_dir

REPEATS = {"full": 5, "quick": 2}

# Our agent and the peer's --agent-opt settings that do the same thing to the workspace.
AGENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "oracle": ("oracle", ("pass_prob=1",)),
    "nop": ("nop", ("pass_prob=0", "wrong_edit_prob=0")),
}
MODES: dict[str, int] = {"serial": 1, "parallel": 2}  # worker processes / peer threads
NOTES = {
    "wall": "ratio = peer wall / ours (above 1: ours is faster); ",
    "cpu": "ratio = peer CPU / ours (above 1: ours costs less): user + system time of the "
    "process and every child it waited for (verifiers, workers), which other work on a shared "
    "machine barely moves; ",
}


def run_ours(
    where: Path, peer: Peer, agent: str, workers: int, repeats: int, run_dir: Path
) -> tuple[Run, Tally]:
    """One pytest run of this harness with one of AGENTS: how it went and its tally."""
    args = [f"--agent={AGENTS[agent][0]}", *(["-n", str(workers)] if workers > 1 else [])]
    return peer_side.run_ours(where, peer, args, repeats, run_dir)


def run_peer(
    where: Path, peer: Peer, agent: str, workers: int, repeats: int, out_root: Path
) -> tuple[Run, Tally]:
    """One run of the peer's mock set up as one of AGENTS: how it went and its tally."""
    args = ["--agent", "mock", *(f"--agent-opt={option}" for option in AGENTS[agent][1])]
    return peer_side.run_peer(where, peer, args, workers, repeats, out_root)


def run(ctx: Context) -> list[dict]:
    peer = find_peer()
    repeats = REPEATS["quick" if ctx.quick else "full"]
    where = pytest_dir(ctx.scratch / "cwd")
    runs: dict[tuple[str, str], dict[str, list[Run]]] = {
        (agent, mode): {"ours": [], "peer": []} for agent in AGENTS for mode in MODES
    }
    trials = 0
    for sample in range(ctx.runs(5, 1)):
        for (agent, mode), sides in runs.items():
            plan = Plan(peer.task_ids, repeats, all_pass=agent == "oracle")
            place = ctx.scratch / f"{agent}-{mode}-{sample}"
            order = ("ours", "peer") if sample % 2 == 0 else ("peer", "ours")
            done = {
                side: (run_ours if side == "ours" else run_peer)(
                    where, peer, agent, MODES[mode], repeats, place / side
                )
                for side in order
            }
            trials = equal_work(plan, done["ours"][1], done["peer"][1])
            for side, (measured, _) in done.items():
                sides[side].append(measured)
    checks = []
    for (agent, mode), sides in runs.items():
        peer_run = f"{' '.join(AGENTS[agent][1])}, --jobs {MODES[mode]}, --runs {repeats}"
        for figure in ("wall", "cpu"):
            ours, theirs = (
                [r.wall_s if figure == "wall" else r.cpu_s for r in sides[side]]
                for side in ("ours", "peer")
            )
            checks.append(
                check(
                    f"{agent}, {mode}, {trials} trials of {len(peer.task_ids)} {PEER} tasks, "
                    f"{figure} time",
                    unit="s",
                    value=ours,
                    floor=theirs,
                    paired=True,
                    ratio="floor/value",
                    floor_is=f"{PEER} {peer.version} on the same trials: mock {peer_run}",
                    # The verifiers, the same on both sides, take most of the time: the harness
                    # may cost at most a quarter more than the peer around them.
                    target=Target("ratio", ">=", 0.8),
                    note=NOTES[figure] + "whole process, every trial graded by the task's "
                    "verify.py on both sides",
                    trials=trials,
                    trials_per_s={
                        side: [round(trials / r.wall_s, 3) for r in sides[side]]
                        for side in ("ours", "peer")
                    },
                    peer=f"{PEER} {peer.version}",
                )
            )
    return checks


BENCHMARK = Benchmark(
    "offline_agents", f"oracle and nop on {PEER}'s own tasks, equal trials, vs {PEER}", run
)
