"""Trials in flight: threads (``--agentbench-concurrency``) and processes (``-n``) against the
peer's ``--jobs``, on equal work.

Work: the ten tasks bundled with the pinned peer (rerun-bench 0.3.0, see ``benchmarks.peer``),
``--sandbox=tmp``, every trial an agent process that sleeps 4 s and leaves the workspace as it
was, graded by the task's own ``verify.py`` (so every trial fails, on both sides). The peer has
no command agent; its CLI adapters run whatever executable ``--agent-opt bin=PATH`` names (with
``--yes``), their own arguments after it. Both sides run the same script: ours with
``--agent=command --agent-cmd=PATH``, the peer as ``--agent opencode --agent-opt bin=PATH``. The
script ignores its arguments, answers ``--version`` at once (the peer asks once a run, for its
record) and otherwise sleeps.

Sizes: repeats 1, 3 and 10 of the ten tasks, all trials in flight at once: the peer with
``--jobs N``, this harness in one process with ``--agentbench-concurrency N`` (no ``-n``), and
with ``-n N`` (N workers, one trial each); N = 10, 30, 100. One in flight: ``--jobs 1`` against
no ``-n`` and concurrency 1, ten trials. The sides take turns going first, run by run.

A fourth side, the pytest floor (``benchmarks.pytest_floor``), runs the same trials as the least
any pytest plugin could: items whose trials start on a pool of threads when collection ends,
and nothing else. Its wall time against ours says what of ours is pytest's own; against the
peer's, whether any pytest plugin could meet the peer's wall time at all.

Figures per run: whole-process wall time, and the peak memory of the whole process tree (the
harness and every child: agents, verifiers, xdist workers), which the kernel keeps for a memory
cgroup the run starts in (``benchmarks.procs.tree_cgroup``). After every run every side's record
is read back and must hold the planned trials, task by task, none passing: otherwise the
benchmark stops and reports no ratio.

    python -m benchmarks --only concurrency            # --quick: 10 and 30 in flight, once each
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.core import Benchmark, Context, Target, check, stats
from benchmarks.peer import (
    PEER,
    Peer,
    Plan,
    Tally,
    equal_work,
    find_peer,
    run_floor,
    run_ours,
    run_peer,
)
from benchmarks.procs import Run, pytest_dir

SLEEP_S = 4
AGENT_SCRIPT = f"""#!/bin/sh
# A stand-in agent CLI: sleeps, then leaves the workspace as it was; --version answers at once.
case "$1" in --version) echo "sleep-agent 1"; exit 0;; esac
exec sleep {SLEEP_S}
"""
REPEATS = {"full": (1, 3, 10), "quick": (1, 3)}  # of each task, all in flight at once
SIDES = ("peer", "threads", "processes", "floor")
MEMORY_BOUND = 1.5  # our tree's peak may be at most this many times the peer's
FLOOR_BOUND = 0.95  # the pytest floor's wall time is at least this share of ours


@dataclass(frozen=True)
class Places:
    """Where each side runs: this plugin and the peer in one directory, the pytest floor in
    another, whose file of trials is all it collects."""

    ours: Path
    floor: Path


def side_run(
    side: str, where: Places, peer: Peer, agent: Path, in_flight: int, repeats: int, place: Path
) -> tuple[Run, Tally]:
    """One run of one side with ``in_flight`` trials at a time, its tree's memory measured."""
    if side == "peer":
        args = ["--agent", "opencode", f"--agent-opt=bin={agent}", "--yes"]
        return run_peer(where.ours, peer, args, in_flight, repeats, place, tree=True)
    if side == "floor":
        return run_floor(where.floor, peer, agent, in_flight, repeats, place, tree=True)
    ours = ["--agent=command", f"--agent-cmd={agent}"]
    if side == "threads":
        ours.append(f"--agentbench-concurrency={in_flight}")
    else:
        ours += ["-n", str(in_flight)]
    return run_ours(where.ours, peer, ours, repeats, place, tree=True)


def measure(
    ctx: Context,
    where: Places,
    peer: Peer,
    agent: Path,
    sides: Sequence[str],
    repeats: int,
    in_flight: int,
    samples: int,
    label: str,
) -> dict[str, list[Run]]:
    """samples runs of each side, taking turns going first; every run's records checked.
    label names the phase: the runs' records are kept apart under it."""
    plan = Plan(peer.task_ids, repeats, all_pass=False)
    runs: dict[str, list[Run]] = {side: [] for side in sides}
    for sample in range(samples):
        order = sides if sample % 2 == 0 else tuple(reversed(sides))
        done = {
            side: side_run(
                side,
                where,
                peer,
                agent,
                in_flight,
                repeats,
                ctx.scratch / label / f"{in_flight}-{side}-{sample}",
            )
            for side in order
        }
        for side in sides:
            if side != "peer":
                equal_work(plan, done[side][1], done["peer"][1])
            runs[side].append(done[side][0])
    return runs


def walls(runs: list[Run]) -> list[float]:
    return [run.wall_s for run in runs]


def peaks(runs: list[Run]) -> list[float]:
    return [run.tree_peak_mb or 0.0 for run in runs]


def figures(runs: list[Run]) -> dict[str, Any]:
    """Everything measured of one side's runs, for the JSON."""
    return {
        "wall_s": stats(walls(runs)),
        "tree_peak_mb": stats(peaks(runs)),
        "cpu_s": stats([run.cpu_s for run in runs]),
        "own_peak_rss_mb": stats([run.max_rss_mb for run in runs]),
        "page_cache_at_end_mb": stats([run.tree_cache_mb or 0.0 for run in runs]),
    }


# figure -> unit, what of a run, which way the ratio goes, target, what the ratio says
FIGURES: dict[str, tuple[str, Callable[[list[Run]], list[float]], str, Target, str]] = {
    "wall time": (
        "s",
        walls,
        "floor/value",
        Target("ratio", ">=", 1.0),
        "ratio = peer wall / ours (at least 1: ours is as fast); whole process",
    ),
    "peak memory of the process tree": (
        "MB",
        peaks,
        "value/floor",
        Target("ratio", "<=", MEMORY_BOUND),
        "ratio = ours / peer; the kernel's peak for a memory cgroup the run starts in (the "
        "harness, agents, verifiers and workers together, page cache they bring in included)",
    ),
}


def compare(
    name: str,
    figure: str,
    runs: dict[str, list[Run]],
    jobs: int,
    peer: Peer,
    trials: int,
    subject: str = "threads",
) -> dict[str, Any]:
    """One figure of a side (our threads unless said) against the peer; every side's figures
    ride along."""
    unit, of, way, target, note = FIGURES[figure]
    return check(
        f"{name}, {figure}",
        unit=unit,
        value=of(runs[subject]),
        floor=of(runs["peer"]),
        paired=True,
        ratio=way,
        floor_is=f"{PEER} {peer.version} --jobs {jobs} on the same trials",
        target=target,
        note=note,
        trials=trials,
        sides={side: figures(side_runs) for side, side_runs in runs.items()},
        peer=f"{PEER} {peer.version}",
    )


def against_floor(name: str, runs: dict[str, list[Run]], trials: int) -> dict[str, Any]:
    """Our threads' wall time against the pytest floor's on the same trials: what the plugin
    adds to pytest itself."""
    return check(
        f"{name}, wall time against the pytest floor",
        unit="s",
        value=walls(runs["threads"]),
        floor=walls(runs["floor"]),
        paired=True,
        ratio="floor/value",
        floor_is="benchmarks.pytest_floor: pytest with no plugin but the trials themselves",
        target=Target("ratio", ">=", FLOOR_BOUND),
        note="ratio = pytest floor wall / ours: the share of our wall time pytest alone needs",
        trials=trials,
    )


def run(ctx: Context) -> list[dict]:
    peer = find_peer()
    where = Places(pytest_dir(ctx.scratch / "cwd"), pytest_dir(ctx.scratch / "floor-cwd"))
    agent = ctx.scratch / "sleep-agent"
    agent.write_text(AGENT_SCRIPT)
    agent.chmod(0o755)
    tasks = len(peer.task_ids)
    # One unmeasured round first: files first read then are charged to that run's cgroup.
    measure(ctx, where, peer, agent, SIDES, 1, tasks, 1, "warm-up")
    checks = []
    for repeats in REPEATS["quick" if ctx.quick else "full"]:
        n = tasks * repeats
        runs = measure(ctx, where, peer, agent, SIDES, repeats, n, ctx.runs(3, 1), "in-flight")
        name = (
            f"{n} in flight ({repeats} repeats of {tasks} tasks, sleep {SLEEP_S} s), "
            f"--agentbench-concurrency {n}, no -n"
        )
        checks += [compare(name, figure, runs, n, peer, n) for figure in FIGURES]
        floor = compare(f"{name}: pytest floor", "wall time", runs, n, peer, n, "floor")
        checks += [against_floor(name, runs, n), floor]
    sides = ("peer", "threads", "floor")
    serial = measure(ctx, where, peer, agent, sides, 1, 1, ctx.runs(3, 1), "serial")
    name = f"one in flight ({tasks} trials, sleep {SLEEP_S} s), --agentbench-concurrency 1, no -n"
    checks.append(compare(name, "wall time", serial, 1, peer, tasks))
    floor = compare(f"{name}: pytest floor", "wall time", serial, 1, peer, tasks, "floor")
    checks += [against_floor(name, serial, tasks), floor]
    return checks


BENCHMARK = Benchmark(
    "concurrency",
    f"trials in flight: --agentbench-concurrency and -n against {PEER} --jobs, equal work",
    run,
)
