"""The harness survives whatever an agent leaves behind, under every sandbox, for real.

One pytest run per sandbox (`-n 2`) runs the whole corpus of pytest_agentbench.testing.hostile:
a 1.5 GB file, a 20 GB sparse file, a name that is not UTF-8, nesting deeper than PATH_MAX,
unreadable modes, a FIFO and a socket, a stdout flood, 100,000 small files, a process that
ignores SIGTERM, an agent that deletes its own workspace, and a fork loop where process limits
hold. Every case must end as a graded trial of the outcome it earns, the run must go on to the
end, and no trial directory may be left in the temporary roots. CI runs this module as root
and again as an ordinary user.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sandbox.bwrap import BwrapProvider
from pytest_agentbench.sandbox.ownership import MEMORY_ROOT, OWNER_PREFIX, owned_directories
from pytest_agentbench.settings import SandboxLimits
from pytest_agentbench.testing.hostile import AGENT_CMD, PIDS_LIMIT, Case, cases, write_suite

from conftest import TEST_IMAGE, our_containers, skip_unless_sandbox

RUN_TIMEOUT_S = 600
LIMITS_OFF = "agentbench: process limits off (*): pids and memory are not limited"


def _process_limits_hold(kind: str) -> bool:
    if kind == "docker":
        return True
    if kind == "bwrap":
        return BwrapProvider(SandboxLimits(), None).use_cgroups
    return False


def _observations(run_dir: Path) -> dict[str, dict[str, Any]]:
    lines = (run_dir / "observations.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    return {record["task"].rsplit("/", 1)[-1]: record for record in records}


def _check(case: Case, observation: dict[str, Any]) -> None:
    """The trial ended as the graded outcome its agent earned."""
    assert observation["status"] == "scored", (case.name, observation.get("cause"))
    last = observation["rounds"][-1]
    assert observation["first_exact"] is (case.outcome == "exact"), (case.name, last)
    assert last["timed_out"] is (case.outcome == "timed_out"), (case.name, last)
    over = last.get("over_disk", "")
    if case.outcome == "over_disk":
        assert over.startswith("workspace grew past --sandbox-disk"), (case.name, last)
    else:
        assert not over, (case.name, over)
    named = last["unexpected"] + last["missing"] + last["invalid"]
    for prefix in case.left:
        assert any(path.startswith(prefix) for path in named), (case.name, prefix, named[:5])


def _memory_leftovers(before: set[str]) -> list[str]:
    """Owner directories in memory that appeared during the run and whose owner is gone."""
    return [
        str(owned.path)
        for owned in owned_directories(MEMORY_ROOT)
        if owned.path.name not in before and owned.owner_gone
    ]


# Checks that nothing is left in /dev/shm: never beside test_trial_ownership's killed runs.
@pytest.mark.xdist_group("memory-root")
@pytest.mark.parametrize(
    "kind",
    [
        "tmp",
        pytest.param("bwrap", marks=pytest.mark.real),
        pytest.param("docker", marks=pytest.mark.real),
    ],
)
def test_hostile_agents_end_as_graded_trials(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    skip_unless_sandbox(kind)
    limits = _process_limits_hold(kind)
    chosen = cases(process_limits=limits)
    suite = write_suite(pytester.path / "suite", chosen)
    tmpdir = pytester.path / "tmproot"
    tmpdir.mkdir()
    run_dir = pytester.path / "run"
    memory_before = {owned.path.name for owned in owned_directories(MEMORY_ROOT)}
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    pytester.makeini("[pytest]\naddopts = -p no:randomly -p no:cacheprovider -p no:benchmark\n")
    result = pytester.runpytest_subprocess(
        "--agent=command",
        f"--agent-cmd={AGENT_CMD}",
        f"--tasks={suite}",
        f"--sandbox={kind}",
        f"--docker-image={TEST_IMAGE}",
        f"--sandbox-pids={PIDS_LIMIT}",
        "--agentbench-dir",
        str(run_dir),
        "-n",
        "2",
        timeout=RUN_TIMEOUT_S,
    )
    exact = sum(case.outcome == "exact" for case in chosen)
    result.assert_outcomes(passed=exact, failed=len(chosen) - exact)
    if limits:
        assert "process limits off" not in result.stdout.str()
    else:
        result.stdout.fnmatch_lines([LIMITS_OFF])
    observations = _observations(run_dir)
    assert sorted(observations) == sorted(case.name for case in chosen)
    for case in chosen:
        _check(case, observations[case.name])
    left = [entry for entry in os.listdir(tmpdir) if entry.startswith("agentbench-")]
    assert left == [], "trial directories left in the temp dir"
    assert _memory_leftovers(memory_before) == [], "trial directories left in memory"
    assert not any(name.startswith(OWNER_PREFIX) for name in os.listdir(tmpdir))
    if kind == "docker":
        # This run's trials only: other runs on the machine make and remove containers meanwhile.
        tasks = {observation["task"] for observation in observations.values()}
        assert set().union(*(our_containers(f"{task}-r") for task in tasks)) == set()
