"""The pytest floor the concurrency benchmark runs beside this plugin and the peer: it runs the
peer's trials as planned, its record reads back like ours, and its verifiers judge as the
peer's do. Nothing here is timed."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.offline_agents import run_peer
from benchmarks.peer import Plan, equal_work, find_peer, run_floor
from benchmarks.procs import pytest_dir


@pytest.mark.real
def test_the_floor_runs_the_planned_trials_as_the_peer_does(tmp_path: Path) -> None:
    """Two at a time, two repeats: every task twice, each graded by its verify.py, none
    passing for an agent that changes nothing (the peer's nop, the floor's /bin/true)."""
    try:
        peer = find_peer()
    except RuntimeError as missing:
        pytest.skip(str(missing))
    plan = Plan(peer.task_ids, repeats=2, all_pass=False)
    floor_dir = pytest_dir(tmp_path / "floor-cwd")
    _, floor = run_floor(floor_dir, peer, Path("/bin/true"), 2, 2, tmp_path / "floor")
    _, theirs = run_peer(pytest_dir(tmp_path / "cwd"), peer, "nop", 2, 2, tmp_path / "peer")
    assert equal_work(plan, floor, theirs) == 2 * len(peer.task_ids) == 20
