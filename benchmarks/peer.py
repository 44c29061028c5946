"""The pinned peer harness, rerun-bench 0.3.0, and both harnesses' runs of its bundled tasks.

What the benchmarks comparing with it share: finding the peer in the venv ``.ci/install-peer.sh``
makes, running either harness on the peer's ten tasks (each trial graded by the task's own
``verify.py``), and reading back each one's own record of the trials (our ``observations.jsonl``,
the peer's ``runs.jsonl``) to check that both did the planned work before any ratio is reported.

The peer's pinned package runs under this Python (``python -m rerun_bench`` with its venv's
site-packages on ``PYTHONPATH``), so both harnesses and every verifier start the same
interpreter with the same site-packages (the peer's bare venv would start each verifier faster
only because it holds nothing, which says nothing about either harness).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.procs import Run, child_env, run_process, run_pytest
from benchmarks.pytest_floor import TRIALS_FILE as FLOOR_TRIALS
from pytest_agentbench.fs.wording import plural

PEER = "rerun-bench"
PEER_VERSION = "0.3.0"
PEER_VENV = Path(os.environ.get("AGENTBENCH_PEER_VENV", "/opt/agentbench-peer/rerun-bench-0.3.0"))
PEER_RUN_ID = "bench"


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
    """The pinned peer: its bundled tasks, its version and its package's import root."""

    task_ids: tuple[str, ...]
    version: str
    site_packages: Path
    tasks_dir: Path


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


def _read_tally(
    path: Path,
    slot: tuple[str, str],
    passed: Callable[[dict[str, Any]], bool],
    error: Callable[[dict[str, Any]], bool],
) -> Tally:
    rows = _lines(path)
    return Tally(
        per_task=_tally(path, rows, slot),
        passed=sum(1 for row in rows if passed(row)),
        errors=sum(1 for row in rows if error(row)),
    )


def our_tally(run_dir: Path) -> Tally:
    """Read back a run of this harness (or of the pytest floor) from its observations.jsonl."""
    return _read_tally(
        run_dir / "observations.jsonl",
        ("task", "repeat"),
        passed=lambda row: row["first_exact"] is True,
        error=lambda row: row["status"] != "scored",
    )


def peer_tally(out_dir: Path) -> Tally:
    """Read back a peer run from its runs.jsonl (agent errors and verifier timeouts: errors)."""
    return _read_tally(
        out_dir / "runs.jsonl",
        ("task_id", "run_index"),
        passed=lambda row: row["passed"] is True,
        error=lambda row: bool(row["agent_error"] or row["verify_timed_out"]),
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
    return Peer(
        task_ids=tuple(ids), version=version, site_packages=Path(site), tasks_dir=Path(tasks)
    )


def run_ours(
    where: Path, peer: Peer, args: Sequence[str], repeats: int, run_dir: Path, *, tree: bool = False
) -> tuple[Run, Tally]:
    """One pytest run of this harness (agent and parallelism in args) on the peer's tasks,
    ``--sandbox=tmp``: how it went and its tally."""
    argv = [*args, "--sandbox=tmp", f"--repeats={repeats}"]
    argv += [f"--tasks=rerun:{peer.tasks_dir}", f"--agentbench-dir={run_dir}"]
    return run_pytest(where, *argv, tree=tree), our_tally(run_dir)


def run_floor(
    where: Path,
    peer: Peer,
    agent: Path,
    jobs: int,
    repeats: int,
    place: Path,
    *,
    tree: bool = False,
) -> tuple[Run, Tally]:
    """One pytest run of the least any pytest plugin could do (``benchmarks.pytest_floor``, this
    plugin left out) on the peer's tasks, ``jobs`` trials at a time: how it went and its tally.
    ``where`` is a directory of its own: the floor's trials are the file collected there."""
    (where / FLOOR_TRIALS).touch()
    place.mkdir(parents=True, exist_ok=True)
    argv = ["-p", "no:agentbench", "-p", "benchmarks.pytest_floor", f"--floor-agent={agent}"]
    argv += [f"--floor-tasks={peer.tasks_dir}", f"--floor-repeats={repeats}"]
    argv += [f"--floor-jobs={jobs}", f"--floor-record={place / 'observations.jsonl'}"]
    return run_pytest(where, *argv, ok=(0,), tree=tree), our_tally(place)


def run_peer(
    where: Path,
    peer: Peer,
    args: Sequence[str],
    jobs: int,
    repeats: int,
    out_root: Path,
    *,
    tree: bool = False,
) -> tuple[Run, Tally]:
    """One run of the peer (agent and its options in args) on its own tasks under this
    interpreter, ``jobs`` trials at a time: how it went and its tally."""
    argv = [sys.executable, "-m", "rerun_bench", "--tasks-dir", str(peer.tasks_dir), "run"]
    argv += [*args, "--runs", str(repeats), "--jobs", str(jobs)]
    argv += ["--out", str(out_root), "--run-id", PEER_RUN_ID, "--quiet"]
    env = {k: v for k, v in child_env().items() if k != "RERUN_BENCH_TASKS_DIR"}
    env["PYTHONPATH"] = str(peer.site_packages)
    run = run_process(argv, cwd=where, env=env, tree=tree)
    if run.returncode != 0:
        raise RuntimeError(f"{PEER} exited {run.returncode}: {run.output[-1000:]}")
    return run, peer_tally(out_root / PEER_RUN_ID)
