"""Whole-process measurements: wall time and peak RSS of one child (or the peak memory of its
whole process tree), pytest runs in a sandbox dir."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.core import REPO
from pytest_agentbench.sandbox.cgroup import own_cgroup_dir

# The pytest plugins the test environment brings (randomly, benchmark and hypothesis from the
# test extras; anyio, which imports trio, and platformdirs from what the tests need) are left
# out: they are no dependency of this plugin, and a user's run loads none of them.
PYTEST_INI = """[pytest]
addopts = -p no:randomly -p no:benchmark -p no:hypothesispytest -p no:anyio -p no:platformdirs
"""


@dataclass(frozen=True)
class Run:
    """How one child process went."""

    wall_s: float
    cpu_s: float  # user + system time of the child and the descendants it waited for
    max_rss_mb: float  # the largest peak RSS of the child and the descendants it waited for
    returncode: int
    output: str
    tree_peak_mb: float | None = None  # the child and every descendant together (tree=True)
    tree_cache_mb: float | None = None  # of which page cache still charged when the tree ended


_cgroups = itertools.count()
PEAK_FILES = ("memory.peak", "memory.max_usage_in_bytes")  # cgroup v2, v1


@dataclass(frozen=True)
class TreeCgroup:
    """A fresh memory cgroup the child enters before it execs: every process it starts is
    counted with it, and the kernel keeps the peak of their memory together."""

    path: Path

    def enter(self) -> None:
        """In the child, between fork and exec."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def peak_mb(self) -> float:
        """The kernel's peak of the charged memory (process memory, kernel memory and page cache
        the tree brought in) since the cgroup was made."""
        for name in PEAK_FILES:
            if (self.path / name).exists():
                return int((self.path / name).read_text()) / 2**20
        raise RuntimeError(f"{self.path}: no memory peak file ({' or '.join(PEAK_FILES)})")

    def cache_mb(self) -> float | None:
        for line in (self.path / "memory.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key in ("cache", "file"):  # v1, v2
                return int(value) / 2**20
        return None


@contextlib.contextmanager
def tree_cgroup() -> Iterator[TreeCgroup]:
    """A memory cgroup of its own below this process's, removed afterwards; an error saying why
    when this process may not make one (it needs root, or a delegated cgroup v2 subtree)."""
    parent = own_cgroup_dir("memory")
    if parent is None:
        raise RuntimeError("no memory cgroup hierarchy here: a tree's peak memory is not measured")
    path = parent / f"agentbench-bench-{os.getpid()}-{next(_cgroups)}"
    try:
        path.mkdir()
    except OSError as exc:
        raise RuntimeError(f"cannot make a memory cgroup for the measured tree: {exc}") from exc
    try:
        yield TreeCgroup(path)
    finally:
        for pause in (0.01, 0.05, 0.2, 1.0):  # a child's exit may reach the cgroup late
            try:
                path.rmdir()
                break
            except OSError:
                time.sleep(pause)


def run_process(
    argv: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None, tree: bool = False
) -> Run:
    """Run argv to completion; wall time and the child's own peak RSS (from wait4). With tree,
    the child runs in a memory cgroup of its own, and the peak memory of the child and all its
    descendants together is measured too."""
    with contextlib.ExitStack() as stack:
        group = stack.enter_context(tree_cgroup()) if tree else None
        log = cwd / ".bench-output.txt"
        with open(log, "wb") as sink:
            start = time.perf_counter()
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=sink,
                preexec_fn=None if group is None else group.enter,
            )
            _, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - start
        peak = None if group is None else group.peak_mb()
        cache = None if group is None else group.cache_mb()
    process.returncode = os.waitstatus_to_exitcode(status)
    output = log.read_text(errors="replace")
    cpu = usage.ru_utime + usage.ru_stime
    return Run(wall, cpu, usage.ru_maxrss / 1024, process.returncode, output, peak, cache)


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


def run_pytest(cwd: Path, *args: str, ok: Sequence[int] = (0, 1), tree: bool = False) -> Run:
    """`python -m pytest -q ARGS` in cwd; a run that did not get through is an error."""
    argv = [sys.executable, "-m", "pytest", "-q", *args]
    run = run_process(argv, cwd=cwd, env=child_env(), tree=tree)
    if run.returncode not in ok:
        tail = "\n".join(run.output.splitlines()[-30:])
        raise RuntimeError(f"pytest {' '.join(args)} exited {run.returncode} in {cwd}:\n{tail}")
    return run
