"""The bound on trials in flight: open files, the cgroup's pids, the Docker engine's memory."""

from __future__ import annotations

import resource
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_agentbench.sandbox import capacity
from pytest_agentbench.settings import SandboxLimits


@pytest.fixture
def soft_files():
    """Restores the descriptor limit a test lowers."""
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    yield before
    resource.setrlimit(resource.RLIMIT_NOFILE, before)


def test_the_soft_file_limit_is_raised_toward_the_hard_one(soft_files) -> None:
    _, hard = soft_files
    most = 50
    if hard != resource.RLIM_INFINITY:
        most = min(most, (hard - capacity.FDS_KEPT) // capacity.FDS_PER_TRIAL)
    resource.setrlimit(resource.RLIMIT_NOFILE, (capacity.FDS_KEPT + 16, hard))
    assert capacity.fd_room(most) == most
    needed = capacity.FDS_KEPT + most * capacity.FDS_PER_TRIAL
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= needed


def test_a_low_hard_file_limit_bounds_the_trials(soft_files) -> None:
    _, hard = soft_files
    low = capacity.FDS_KEPT + 5 * capacity.FDS_PER_TRIAL
    resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
    fake = SimpleNamespace(kind="tmp")
    limits = SandboxLimits()
    real_raise = resource.setrlimit

    def refuse(which: int, value: tuple[int, int]) -> None:  # as if the hard limit were low
        raise ValueError("not allowed")

    resource.setrlimit = refuse  # type: ignore[assignment]
    try:
        assert capacity.trial_capacity(fake, limits, 100) == (5, "open files (ulimit -n)")
        assert capacity.trial_capacity(fake, limits, 3) == (3, None)
    finally:
        resource.setrlimit = real_raise  # type: ignore[assignment]


def test_a_cgroup_pids_limit_bounds_the_trials(tmp_path: Path, monkeypatch) -> None:
    own = Path("/proc/self/cgroup").read_text().splitlines()[0].split(":", 2)[2].lstrip("/")
    group = tmp_path / own
    group.mkdir(parents=True, exist_ok=True)
    (group / "pids.max").write_text("2000\n")
    (group / "pids.current").write_text("50\n")
    monkeypatch.setattr(capacity, "CGROUP_ROOT", tmp_path)
    limits = SandboxLimits(pids=64)
    assert capacity.pids_room(limits) == (2000 - 50) // 65
    room, why = capacity.trial_capacity(SimpleNamespace(kind="bwrap"), limits, 100, processes=2)
    assert room == (2000 - 50) // 65 // 2
    assert why is not None and "pids.max" in why
    (group / "pids.max").write_text("max\n")
    assert capacity.pids_room(limits) is None


def test_the_docker_engine_s_memory_bounds_its_containers() -> None:
    engine = SimpleNamespace(info=lambda: {"MemTotal": 24 << 30})
    provider = SimpleNamespace(kind="docker", client=engine)
    limits = SandboxLimits(memory="2g")
    room, why = capacity.trial_capacity(provider, limits, 100)  # type: ignore[arg-type]
    assert room == 12 and "--docker-memory 2g" in (why or "")
    assert capacity.trial_capacity(provider, limits, 10) == (10, None)  # type: ignore[arg-type]
