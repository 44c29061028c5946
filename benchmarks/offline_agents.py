"""Offline agents: whole-process wall per trial of the mock agent against a peer harness.

Subject: ``pytest --agent=mock --sandbox=tmp --repeats=20`` (the peer does not isolate
either) on ten generated directory tasks (200 trials).
Peer: rerun-bench's mock agent on its own ten bundled tasks with ``--runs 20``, installed from
PyPI into a throwaway venv under the temp directory. Both figures include start-up. When the
peer cannot be installed, the figure is measured against the plain-pytest floor instead and
the JSON says why.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.core import Benchmark, Context, Target, check
from benchmarks.procs import pytest_dir, run_process, run_pytest
from benchmarks.taskgen import make_tasks

PEER = "rerun-bench"
PEER_VENV = Path(tempfile.gettempdir()) / "agentbench-bench-peer-venv"
TASKS, REPEATS = 10, 20

FLOOR_TEST = """
import os, shutil, tempfile
import pytest

TASKS = {tasks!r}


@pytest.mark.parametrize("repeat", range({repeats}))
@pytest.mark.parametrize("task", sorted(os.listdir(TASKS)))
def test_trial(task, repeat):
    root = tempfile.mkdtemp()
    shutil.copytree(os.path.join(TASKS, task, "workspace"), os.path.join(root, "w"))
    for dirpath, _dirs, files in os.walk(os.path.join(root, "w")):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as handle:
                handle.read()
    shutil.rmtree(root)
"""


def peer_command() -> tuple[Path | None, str]:
    """The peer's console script in its throwaway venv, installing it once; or why not."""
    script = PEER_VENV / "bin" / PEER
    if script.exists():
        return script, ""
    try:
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
        subprocess.run(
            [str(PEER_VENV / "bin" / "pip"), "install", "-q", PEER],
            check=True,
            capture_output=True,
            timeout=300,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        stderr = getattr(exc, "stderr", b"") or b""
        return None, f"pip install {PEER} failed: {stderr.decode(errors='replace')[-500:]}"
    return script, ""


def peer_version(script: Path) -> str:
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=False)
    return (done.stdout or done.stderr).strip()


def run(ctx: Context) -> list[dict]:
    tasks = make_tasks(ctx.scratch / "tasks", TASKS)
    subject_dir = pytest_dir(ctx.scratch / "subject")
    trials = TASKS * REPEATS
    subject_args = ("--agent=mock", "--sandbox=tmp", f"--repeats={REPEATS}", f"--tasks={tasks}")
    script, why_not = peer_command()
    peer_runs = 4 if ctx.quick else REPEATS
    subject, peer = [], []
    for _ in range(ctx.runs(5, 1)):
        subject.append(run_pytest(subject_dir, *subject_args).wall_s / trials * 1000)
        if script is not None:
            out = ctx.scratch / "peer-out"
            argv = [str(script), "run", "--agent", "mock", "--runs", str(peer_runs)]
            done = run_process([*argv, "--out", str(out), "--quiet"], cwd=ctx.scratch)
            if done.returncode != 0:
                raise RuntimeError(f"{PEER} exited {done.returncode}: {done.output[-1000:]}")
            peer.append(done.wall_s / (TASKS * peer_runs) * 1000)
    if script is not None:
        return [
            check(
                f"mock agent, {trials} trials, speed vs {PEER}",
                unit="ms/trial",
                value=subject,
                floor=peer,
                paired=True,
                floor_is=f"{PEER} ({peer_version(script)}) mock agent, its 10 bundled tasks, "
                f"--runs {peer_runs}, whole process",
                ratio="floor/value",
                target=Target("ratio", ">=", 20),
                note="ratio = peer ms per trial / ours ms per trial; start-up included",
                peer=PEER,
            )
        ]
    floor_dir = pytest_dir(ctx.scratch / "floor")
    (floor_dir / "test_floor.py").write_text(FLOOR_TEST.format(tasks=str(tasks), repeats=REPEATS))
    floor = [
        run_pytest(floor_dir, "test_floor.py", ok=(0,)).wall_s / trials * 1000
        for _ in range(ctx.runs(3, 1))
    ]
    return [
        check(
            f"mock agent, {trials} trials, vs plain pytest (peer unavailable)",
            unit="ms/trial",
            value=subject,
            floor=floor,
            floor_is=f"{trials} pytest items copying and reading back the same input trees",
            target=Target("ratio", "<=", 1.5),
            note=why_not,
            peer=None,
        )
    ]


BENCHMARK = Benchmark("offline_agents", "mock agent per-trial speed vs the peer rerun-bench", run)
