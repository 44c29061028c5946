"""Figures a trajectory gives, for the Observation: requests, tool calls by kind, the agent's
own test runs, files read and written, and where the trial's time went.

Unknown stays unknown: a figure the trajectory's source cannot give is None, never 0.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from pytest_agentbench.trajectory.model import KINDS, Trajectory

# Test runners a shell call may start: the agent verifying its change (a verification run).
TEST_RUNNERS = re.compile(
    r"(?:^|[\s;&|(/'\"])(?:"
    r"pytest|py\.test|python[\d.]*\s+-m\s+(?:pytest|unittest)|tox|nox|"
    r"(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?test|npx\s+(?:jest|vitest|mocha)|jest|vitest|mocha|"
    r"go\s+test|cargo\s+(?:test|nextest)|make\s+(?:test|check)|ctest|"
    r"mvn\s+(?:\S+\s+)*test|gradle\w*\s+test|\./gradlew\s+test|"
    r"dotnet\s+test|rspec|bundle\s+exec\s+rspec|phpunit|deno\s+test|mix\s+test|swift\s+test"
    r")(?=$|[\s;&|)'\"])"
)


def runs_tests(command: str, test_command: str | None) -> bool:
    """Whether a shell command runs the task's own tests, or a known test runner."""
    if test_command and _normal(test_command) in _normal(command):
        return True
    return TEST_RUNNERS.search(command) is not None


def _normal(command: str) -> str:
    try:
        return " ".join(shlex.split(command))
    except ValueError:
        return " ".join(command.split())


def request_count(trajectory: Trajectory) -> int | None:
    """Model requests: one per agent step that stands for a request (the wire's, or a CLI
    that reports each request's tokens); None when the source does not mark them (codex's
    events group a turn's requests; stdout lines are no requests)."""
    if trajectory.origin in ("stdout", "none"):
        return None  # lines of output are not model requests
    steps = trajectory.agent_steps
    marked = [s for s in steps if s.request is not None or s.tokens is not None]
    return len(marked) if len(marked) == len(steps) else None


def trajectory_figures(
    trajectory: Trajectory, *, test_command: str | None, agent_s: float, harness_s: float
) -> dict[str, Any]:
    """The figures of one trial (docs/trajectories.md says what each means). agent_s: the
    agent's rounds as the Observation's wall_s has them; harness_s: the rest of the trial,
    measured (sandbox, grading, artifacts)."""
    calls = trajectory.tool_calls()
    by_kind = {kind: sum(1 for c in calls if c.kind == kind) for kind in KINDS}
    agent_steps = trajectory.agent_steps
    latencies = [s.latency_s for s in agent_steps]
    model_s = (
        round(sum(v for v in latencies if v is not None), 6)
        if agent_steps and None not in latencies
        else None
    )
    read = {p for c in calls if c.kind == "read" for p in c.paths}
    written = {p for c in calls if c.kind == "edit" for p in c.paths}
    known = trajectory.origin != "none"
    return {
        "origin": trajectory.origin,
        "steps": len(trajectory.steps),
        "requests": request_count(trajectory),
        "side_requests": sum(1 for s in agent_steps if s.side) if known else None,
        "tool_calls": {"total": len(calls), **by_kind} if known else None,
        "verification_runs": sum(
            1 for c in calls if c.kind == "shell" and runs_tests(c.command or "", test_command)
        )
        if known
        else None,
        "files_read": len(read) if known else None,
        "files_written": len(written) if known else None,
        "model_s": model_s,
        "tools_s": round(max(agent_s - model_s, 0.0), 6) if model_s is not None else None,
        "harness_s": round(harness_s, 6),
    }
