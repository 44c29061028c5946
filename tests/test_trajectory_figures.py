"""Figures from a trajectory: counts by kind, test runs, the time line; unknown stays None."""

from __future__ import annotations

import pytest

from pytest_agentbench.trajectory.figures import runs_tests, trajectory_figures
from pytest_agentbench.trajectory.model import Step, ToolCall, Trajectory


def call(kind: str, **kw) -> ToolCall:
    return ToolCall(call_id=kind, name=kind, kind=kind, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "command",
    [
        "pytest -q",
        "python -m pytest tests/",
        "cd app && npm test",
        "go test ./...",
        "cargo test --all",
        "python3 -m unittest discover",
        "bash -lc 'make test'",
        "yarn run test",
    ],
)
def test_test_runners_are_verification_runs(command: str) -> None:
    assert runs_tests(command, None)


@pytest.mark.parametrize("command", ["ls", "cat pytest.ini", "pip install pytest-cov", "gotest"])
def test_other_commands_are_not(command: str) -> None:
    assert not runs_tests(command, None)


def test_the_tasks_own_test_command_counts_whatever_it_is() -> None:
    assert runs_tests("cd /w && ./check.sh  --fast", "./check.sh --fast")
    assert not runs_tests("./check.sh", "./check.sh --fast")


def test_figures_count_by_kind_and_keep_unknown_unknown() -> None:
    steps = [
        Step("user", "do it"),
        Step(
            "agent",
            tool_calls=[
                call("read", paths=["a.py"]),
                call("read", paths=["a.py"]),
                call("shell", command="pytest -q"),
            ],
            tokens={"input": 10, "cached_input": 0, "output": 2, "reasoning": None},
            latency_s=1.5,
            request=1,
        ),
        Step("agent", tool_calls=[call("edit", paths=["a.py", "b.py"])], latency_s=None, request=2),
    ]
    figures = trajectory_figures(
        Trajectory("codex", "wire", steps), test_command=None, agent_s=10.0, harness_s=0.5
    )
    assert figures["requests"] == 2
    assert figures["tool_calls"] == {
        "total": 4, "shell": 1, "read": 2, "edit": 1, "search": 0, "other": 0
    }  # fmt: skip
    assert figures["verification_runs"] == 1
    assert (figures["files_read"], figures["files_written"]) == (1, 2)
    assert figures["model_s"] is None and figures["tools_s"] is None  # one latency unknown
    assert figures["harness_s"] == 0.5


def test_events_without_request_boundaries_leave_requests_unknown() -> None:
    steps = [Step("user", "go"), Step("agent", tool_calls=[call("shell", command="ls")])]
    figures = trajectory_figures(
        Trajectory("codex", "events", steps), test_command=None, agent_s=3.0, harness_s=0.1
    )
    assert figures["requests"] is None
    assert figures["tool_calls"]["shell"] == 1


def test_a_trial_without_a_trajectory_knows_no_counts() -> None:
    figures = trajectory_figures(
        Trajectory("custom", "none", [Step("user", "go")]),
        test_command=None,
        agent_s=1.0,
        harness_s=0.1,
    )
    assert figures["requests"] is None and figures["tool_calls"] is None
    assert figures["files_read"] is None and figures["verification_runs"] is None


def test_the_time_line_splits_the_agents_time_at_the_model_requests() -> None:
    steps = [Step("agent", latency_s=2.0, request=1), Step("agent", latency_s=3.0, request=2)]
    figures = trajectory_figures(
        Trajectory("claude", "wire", steps), test_command=None, agent_s=8.0, harness_s=1.0
    )
    assert (figures["model_s"], figures["tools_s"], figures["harness_s"]) == (5.0, 3.0, 1.0)
