"""A measured process tree's peak memory counts every descendant at once, where wait4's peak
RSS is that of the largest single process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks.procs import run_process, tree_cgroup

# The child starts two grandchildren that each hold 150 MB at the same time.
GRANDCHILD = "import time; block = bytearray(150 << 20); time.sleep(0.5)"
CHILD = (
    "import subprocess, sys; "
    f"kids = [subprocess.Popen([sys.executable, '-c', {GRANDCHILD!r}]) for _ in range(2)]; "
    "[kid.wait() for kid in kids]"
)


def cgroups_or_skip() -> None:
    try:
        with tree_cgroup():
            pass
    except RuntimeError as missing:
        pytest.skip(str(missing))


@pytest.mark.real
def test_the_peak_of_the_tree_adds_up_the_grandchildren(tmp_path: Path) -> None:
    cgroups_or_skip()
    done = run_process([sys.executable, "-c", CHILD], cwd=tmp_path, tree=True)
    assert done.returncode == 0
    assert 150 < done.max_rss_mb < 250  # the largest process
    assert done.tree_peak_mb is not None and done.tree_peak_mb > 300


def test_without_tree_nothing_is_said_of_it(tmp_path: Path) -> None:
    done = run_process([sys.executable, "-c", "pass"], cwd=tmp_path)
    assert done.returncode == 0 and done.tree_peak_mb is None
