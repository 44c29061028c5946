"""The fixtures docs/hooks.md offers for users' own tests: the run-wide ones work in an
ordinary test, the trial-only ones refuse it with a message saying so."""

from __future__ import annotations

import pytest

DISTS = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])

USER_TESTS = """
from pytest_agentbench.tasks.model import MemoryTree, Task


def test_run_wide_fixtures(agentbench_settings, agentbench_agent, agentbench_sandbox_provider):
    assert agentbench_settings.agent == "mock"
    assert agentbench_agent is not None
    task = Task(
        id="mine", prompt="-", source="test", make_input=lambda: MemoryTree({"a.txt": b"x"})
    )
    with agentbench_sandbox_provider.create(task, "mine-r0") as sandbox:
        assert (sandbox.workspace / "a.txt").read_bytes() == b"x"


def test_task(agentbench_task):
    pass


def test_workspace(agentbench_workspace):
    pass
"""


@DISTS
def test_run_wide_fixtures_work_and_trial_only_ones_say_so(pytester, dist) -> None:
    pytester.makepyfile(test_mine=USER_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--agent=mock", "--sandbox=tmp", *dist, "test_mine.py"
    )
    result.assert_outcomes(passed=1, errors=2)
    for name in ("test_task", "test_workspace"):
        result.stdout.fnmatch_lines(
            [
                f"*ERROR at setup of {name}*",
                f"test_mine.py::{name}: agentbench_task, agentbench_sandbox and "
                "agentbench_workspace are trial-only: *",
            ]
        )
    assert "Traceback" not in result.stdout.str()
