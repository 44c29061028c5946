"""Trials in flight at once in the isolating sandboxes, for real: bubblewrap (with its
per-trial cgroups) and Docker (a container per trial). The report is that of one trial at a
time, and nothing a trial made outlives the run."""

from __future__ import annotations

import uuid

import pytest
from test_concurrency import HALF_SOLVES, comparable, load

from conftest import TEST_IMAGE, our_containers, simple_tasks, skip_unless_sandbox

pytestmark = pytest.mark.real


@pytest.mark.parametrize("sandbox", ["bwrap", "docker"])
def test_trials_in_flight_at_once_report_as_one_at_a_time(
    pytester: pytest.Pytester, sandbox: str
) -> None:
    skip_unless_sandbox(sandbox)
    prefix = f"c{uuid.uuid4().hex[:6]}"  # names this test's trials, and so its containers
    tasks = pytester.path / "tasks"
    simple_tasks(tasks, 3)
    for task in tasks.iterdir():
        task.rename(tasks / f"{prefix}-{task.name}")
    image = [f"--docker-image={TEST_IMAGE}"] if sandbox == "docker" else []
    common = [
        "-p",
        "no:cacheprovider",
        "--agent=command",
        f"--agent-cmd={HALF_SOLVES}",
        f"--sandbox={sandbox}",
        *image,
        "--repeats=2",
        f"--tasks={tasks}",
    ]
    one = pytester.runpytest_subprocess(*common, "--agentbench-json=one.json", timeout=300)
    many = pytester.runpytest_subprocess(
        *common, "--agentbench-concurrency=6", "--agentbench-json=6.json", timeout=300
    )
    assert one.ret == many.ret == pytest.ExitCode.TESTS_FAILED
    reference, other = load(pytester.path / "one.json"), load(pytester.path / "6.json")
    assert len(reference["observations"]) == 6
    assert sum(o["final_exact"] for o in reference["observations"]) == 4
    assert comparable(reference) == comparable(other)
    if sandbox == "docker":
        assert our_containers(prefix) == set(), "every trial's container is removed"
