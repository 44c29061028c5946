"""Offline agents on equal work: this harness against rerun-bench on rerun-bench's own tasks.

Both harnesses run the ten tasks bundled with the pinned peer (rerun-bench 0.3.0, from the venv
``.ci/install-peer.sh`` makes), each trial graded by the task's own ``verify.py``, with the same
trials in every mode:

- agents: ``--agent=oracle`` against the peer's mock with ``pass_prob=1`` (both lay the task's
  ``solution/`` over the workspace: every trial passes), ``--agent=nop`` against the mock with
  ``pass_prob=0 wrong_edit_prob=0`` (both leave the workspace as it was: every trial fails);
- modes: serial (``-n 0`` / ``--jobs 1``) and parallel (``-n 2`` / ``--jobs 2``), the same
  repeats (``--repeats`` / ``--runs``) in both;
- one interpreter: the peer's pinned package runs under this Python (``python -m rerun_bench``
  with its venv's site-packages on ``PYTHONPATH``), so both harnesses and every verifier start
  the same interpreter with the same site-packages (the peer's bare venv would start each
  verifier faster only because it holds nothing, which says nothing about either harness).

Each run's trials and passes are read back from each harness's own record (our
``observations.jsonl``, the peer's ``runs.jsonl``) and must match the plan, task by task, on
both sides: otherwise the benchmark refuses to report. Whole-process wall time and CPU time
(the process and every child it waited for), start-up and the end-of-run summary included;
the two harnesses alternate which goes first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.core import Benchmark, Context, Target, check
from benchmarks.procs import Run, child_env, pytest_dir, run_process, run_pytest
from pytest_agentbench.fs.wording import plural

PEER = "rerun-bench"
PEER_VERSION = "0.3.0"
PEER_VENV = Path(os.environ.get("AGENTBENCH_PEER_VENV", "/opt/agentbench-peer/rerun-bench-0.3.0"))
PEER_RUN_ID = "bench"
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


class UnequalWork(RuntimeError):
    """The two harnesses did not run the same trials: no ratio may be reported."""


@dataclass(frozen=True)
class Tally:
    """What one harness's record says it ran: trials per task, passes, trials not graded."""

    per_task: Mapping[str, int]
    passed: int
    errors: int

    @property
    def trials(self) -> int:
        return sum(self.per_task.values())


@dataclass(frozen=True)
class Plan:
    """The trials both harnesses must run: every task ``repeats`` times."""

    tasks: tuple[str, ...]
    repeats: int
    all_pass: bool  # the oracle passes every trial, nop none

    @property
    def trials(self) -> int:
        return len(self.tasks) * self.repeats


@dataclass(frozen=True)
class Peer:
    """The pinned peer: its version, its package's import root and its bundled tasks."""

    version: str
    site_packages: Path
    tasks_dir: Path
    task_ids: tuple[str, ...]


def _lines(path: Path) -> list[dict[str, Any]]:
    """Every JSON line of path; a missing file or a line that is not an object is an error."""
    if not path.is_file():
        raise UnequalWork(f"{path}: missing, the run wrote no record of its trials")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        if not isinstance(row, dict):
            raise UnequalWork(f"{path}:{number}: not a JSON object")
        rows.append(row)
    return rows


def _tally(path: Path, rows: list[dict[str, Any]], slot: tuple[str, str]) -> Counter[str]:
    """Trials per task; a (task, repeat) slot recorded twice is an error."""
    slots = Counter((row[slot[0]], row[slot[1]]) for row in rows)
    twice = sorted(f"{task} #{index}" for (task, index), n in slots.items() if n > 1)
    if twice:
        raise UnequalWork(f"{path}: trials recorded more than once: {', '.join(twice)}")
    return Counter(row[slot[0]] for row in rows)


def our_tally(run_dir: Path) -> Tally:
    """Read back a run of this harness from its observations.jsonl."""
    path = run_dir / "observations.jsonl"
    rows = _lines(path)
    return Tally(
        per_task=_tally(path, rows, ("task", "repeat")),
        passed=sum(1 for row in rows if row["first_exact"] is True),
        errors=sum(1 for row in rows if row["status"] != "scored"),
    )


def peer_tally(out_dir: Path) -> Tally:
    """Read back a peer run from its runs.jsonl (agent errors and verifier timeouts: errors)."""
    path = out_dir / "runs.jsonl"
    rows = _lines(path)
    return Tally(
        per_task=_tally(path, rows, ("task_id", "run_index")),
        passed=sum(1 for row in rows if row["passed"] is True),
        errors=sum(1 for row in rows if row["agent_error"] or row["verify_timed_out"]),
    )


def equal_work(plan: Plan, ours: Tally, peer: Tally) -> int:
    """The trial count both harnesses ran; UnequalWork saying what differs when they did not
    both run exactly the plan, with the outcomes the agents guarantee."""
    wanted = dict.fromkeys(plan.tasks, plan.repeats)
    passes = plan.trials if plan.all_pass else 0
    problems = []
    for name, tally in (("this harness", ours), (PEER, peer)):
        if dict(tally.per_task) != wanted:
            off = sorted(
                f"{task}: {tally.per_task.get(task, 0)}"
                for task in sorted({*wanted, *tally.per_task})
                if tally.per_task.get(task, 0) != wanted.get(task, 0)
            )
            problems.append(
                f"{name} ran {plural(tally.trials, 'trial')}, the plan is {plan.trials} "
                f"({plan.repeats} of each of {len(plan.tasks)} tasks; off: {', '.join(off)})"
            )
        if tally.errors:
            problems.append(f"{name} has {plural(tally.errors, 'trial')} not graded")
        if tally.passed != passes:
            problems.append(
                f"{name} passed {plural(tally.passed, 'trial')}, the agent passes {passes}"
            )
    if problems:
        raise UnequalWork("unequal work, no ratio reported: " + "; ".join(problems))
    return plan.trials


def find_peer(venv: Path = PEER_VENV) -> Peer:
    """The pinned peer in its venv; an error saying how to install it when it is not there."""
    python = venv / "bin" / "python"
    code = (
        "import json, pathlib, rerun_bench as r; from rerun_bench import tasks as t; "
        "print(json.dumps([r.__version__, str(pathlib.Path(r.__file__).parent.parent), "
        "str(t.default_tasks_dir()), [task.id for task in t.discover()]]))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("RERUN_BENCH_TASKS_DIR", "PYTHONPATH")}
    try:
        done = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, env=env, check=True
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        raise RuntimeError(
            f"{PEER} {PEER_VERSION} is not usable in {venv} ({exc}); install it with "
            ".ci/install-peer.sh (or point AGENTBENCH_PEER_VENV at its venv)"
        ) from exc
    version, site, tasks, ids = json.loads(done.stdout)
    if version != PEER_VERSION:
        raise RuntimeError(f"{venv} holds {PEER} {version}, the comparison pins {PEER_VERSION}")
    return Peer(version, Path(site), Path(tasks), tuple(ids))


def run_ours(
    where: Path, peer: Peer, agent: str, workers: int, repeats: int, run_dir: Path
) -> tuple[Run, Tally]:
    """One pytest run of this harness on the peer's tasks: how it went and its tally."""
    args = [f"--agent={AGENTS[agent][0]}", "--sandbox=tmp", f"--repeats={repeats}"]
    args += [f"--tasks=rerun:{peer.tasks_dir}", f"--agentbench-dir={run_dir}"]
    if workers > 1:
        args += ["-n", str(workers)]
    return run_pytest(where, *args), our_tally(run_dir)


def run_peer(
    where: Path, peer: Peer, agent: str, workers: int, repeats: int, out_root: Path
) -> tuple[Run, Tally]:
    """One run of the peer on its own tasks under this interpreter: how it went and tally."""
    argv = [sys.executable, "-m", "rerun_bench", "--tasks-dir", str(peer.tasks_dir), "run"]
    argv += ["--agent", "mock", "--runs", str(repeats), "--jobs", str(workers)]
    for option in AGENTS[agent][1]:
        argv += ["--agent-opt", option]
    argv += ["--out", str(out_root), "--run-id", PEER_RUN_ID, "--quiet"]
    env = {k: v for k, v in child_env().items() if k != "RERUN_BENCH_TASKS_DIR"}
    env["PYTHONPATH"] = str(peer.site_packages)
    run = run_process(argv, cwd=where, env=env)
    if run.returncode != 0:
        raise RuntimeError(f"{PEER} exited {run.returncode}: {run.output[-1000:]}")
    return run, peer_tally(out_root / PEER_RUN_ID)


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
