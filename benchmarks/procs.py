"""Whole-process measurements: wall time and peak RSS of one child, pytest runs in a sandbox dir."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.core import REPO

PYTEST_INI = """[pytest]
addopts = -p no:randomly -p no:benchmark -p no:hypothesispytest
"""


@dataclass(frozen=True)
class Run:
    """How one child process went."""

    wall_s: float
    cpu_s: float  # user + system time of the child itself
    max_rss_mb: float
    returncode: int
    output: str


def run_process(argv: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None) -> Run:
    """Run argv to completion; wall time and the child's own peak RSS (from wait4)."""
    log = cwd / ".bench-output.txt"
    with open(log, "wb") as sink:
        start = time.perf_counter()
        process = subprocess.Popen(
            list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    output = log.read_text(errors="replace")
    cpu = usage.ru_utime + usage.ru_stime
    return Run(wall, cpu, usage.ru_maxrss / 1024, process.returncode, output)


def child_env() -> dict[str, str]:
    """The environment of measured runs: this checkout's code first, no user pytest options."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env["PYTHONPATH"] = str(REPO)
    return env


def pytest_dir(path: Path) -> Path:
    """A directory with its own pytest.ini, so the repository's config never leaks in."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "pytest.ini").write_text(PYTEST_INI)
    return path


def run_pytest(cwd: Path, *args: str, ok: Sequence[int] = (0, 1)) -> Run:
    """`python -m pytest -q ARGS` in cwd; a run that did not get through is an error."""
    run = run_process([sys.executable, "-m", "pytest", "-q", *args], cwd=cwd, env=child_env())
    if run.returncode not in ok:
        tail = "\n".join(run.output.splitlines()[-30:])
        raise RuntimeError(f"pytest {' '.join(args)} exited {run.returncode} in {cwd}:\n{tail}")
    return run
