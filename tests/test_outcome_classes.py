"""Outcome classes kept apart: infrastructure failures are counted by cause, never scored, run
again as fresh trials, stop the run through the breaker (serially and under xdist), and are
coded again on resume."""

from __future__ import annotations

import json

import pytest
from tiny_tasks import make_tasks

from pytest_agentbench.run.store import read_observations

DIST = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])

# The command agent, whose sandbox fails to start for the trials named in FLAKY_TRIALS
# (task-rN=count: its first `count` attempts), as a machine in trouble would.
FLAKY_CONFTEST = """
import os
from pathlib import Path

from pytest_agentbench.agents.command import CommandAgent, CommandSession
from pytest_agentbench.sandbox.base import InfrastructureError


def failing():
    pairs = [p.split("=") for p in os.environ.get("FLAKY_TRIALS", "").split(",") if p]
    return {name: int(count) for name, count in pairs}


class FlakySession(CommandSession):
    def run_round(self, prompt, round_index, timeout):
        name = f"{self.ctx.task.id}-r{self.ctx.repeat}"
        tries = Path(os.environ["FLAKY_DIR"], name)
        done = int(tries.read_text()) if tries.exists() else 0
        tries.write_text(str(done + 1))
        if done < failing().get(name, 0) or "all" in failing():
            raise InfrastructureError("sandbox_start", f"attempt {done} of {name}")
        return super().run_round(prompt, round_index, timeout)


class FlakyAgent(CommandAgent):
    name = "flaky"

    def start(self, ctx):
        return FlakySession(self, ctx)


def pytest_agentbench_agent_names():
    return ["flaky"]


def pytest_agentbench_make_agent(name, settings, config):
    return FlakyAgent(settings) if name == "flaky" else None
"""

BASE = [
    "-p",
    "no:randomly",
    "--agent=flaky",
    "--agent-cmd=sed -i s/draft/final/ notes.txt",
    "--sandbox=tmp",
    "--tasks=tiny-tasks",
    "--agentbench-dir=run",
    "--agentbench-json=out.json",
]


@pytest.fixture
def flaky(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest(FLAKY_CONFTEST)
    make_tasks(pytester.path, 4)
    (pytester.path / "tries").mkdir()
    monkeypatch.setenv("FLAKY_DIR", str(pytester.path / "tries"))
    return pytester


def recorded(pytester: pytest.Pytester) -> list[dict]:
    observations, notice = read_observations(pytester.path / "run" / "observations.jsonl")
    assert notice is None
    return observations


def report(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "out.json").read_text())


def test_an_infrastructure_failure_is_counted_by_cause_and_never_scored(
    flaky: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLAKY_TRIALS", "t00-r0=9")
    result = flaky.runpytest_subprocess(*BASE, "--agentbench-retry-infra=0")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "FAILED (infrastructure) tiny-tasks/t00::r0 - infrastructure failure (sandbox_*",
            "3 trials scored",
            "not scored: infrastructure failures 1 (sandbox_start 1)",
        ]
    )
    summary = report(flaky)["summary"]
    assert (summary["trials"], summary["first_exact"], summary["coverage"]) == (3, 1.0, 0.75)
    assert summary["infrastructure_failures"] == 1
    assert summary["infrastructure_causes"] == {"sandbox_start": 1}
    (failed,) = [o for o in recorded(flaky) if o["status"] != "scored"]
    assert (failed["status"], failed["cause"]) == ("infrastructure", "sandbox_start")
    assert "attempt 0 of t00-r0" in failed["detail"]
    assert "infra_retries" not in failed


def test_a_failed_attempt_is_run_again_as_a_fresh_trial_and_kept_as_evidence(
    flaky: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLAKY_TRIALS", "t00-r0=2,t01-r0=5")
    result = flaky.runpytest_subprocess(*BASE)  # the default: two more attempts
    result.assert_outcomes(passed=3, failed=1)
    cells = {o["task"]: o for o in recorded(flaky)}
    assert cells["t00"]["status"] == "scored" and cells["t00"]["final_exact"]
    assert [r["cause"] for r in cells["t00"]["infra_retries"]] == ["sandbox_start"] * 2
    assert cells["t01"]["status"] == "infrastructure" and len(cells["t01"]["infra_retries"]) == 2
    trial = flaky.path / "run" / "trials" / "t00-r0"
    for attempt in (1, 2):
        evidence = (trial / f"attempt-{attempt}" / "infrastructure.txt").read_text()
        assert f"attempt {attempt - 1} of t00-r0" in evidence
    assert (trial / "diff.patch").is_file() and not (trial / "attempt-3").exists()
    assert (flaky.path / "tries" / "t01-r0").read_text() == "3"  # 1 + 2 retries, no more
    summary = report(flaky)["summary"]
    assert (summary["infra_retries"], summary["infrastructure_failures"]) == (4, 1)
    result.stdout.fnmatch_lines(
        ["run again after an infrastructure failure: 4 attempts (sandbox_start 4), *"]
    )


@DIST
def test_the_breaker_stops_a_run_after_k_failures_in_a_row(
    flaky: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, dist: list[str]
) -> None:
    monkeypatch.setenv("FLAKY_TRIALS", "all=1")
    result = flaky.runpytest_subprocess(
        *BASE,
        "--repeats=3",
        "--agentbench-retry-infra=0",
        "--agentbench-max-consecutive-failures=3",
        *dist,
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    reason = (
        "3 trials in a row ended in an infrastructure failure or a failed model call that "
        "changed nothing (last: sandbox_start)"
    )
    result.stdout.fnmatch_lines(
        [
            f"agentbench breaker: {reason}; no new trial started*",
            "continue with: pytest * --agentbench-resume run",
        ]
    )
    observations = recorded(flaky)
    failed = [o for o in observations if o["status"] == "infrastructure"]
    not_started = [o for o in observations if o["status"] == "breaker_open"]
    # Serially the third failure stops the run; under xdist each worker may end the trial it
    # was running, and skips what it would start next.
    assert 3 <= len(failed) <= 4 and len(failed) + len(not_started) < 12
    assert not any(o["status"] == "scored" for o in observations)
    run = json.loads((flaky.path / "run" / "run.json").read_text())
    assert run["stopped"] == {"by": "breaker", "reason": reason}
    breaker = report(flaky)["run"]["breaker"]
    assert breaker["open"] and breaker["not_started"] == len(not_started)
    assert not list((flaky.path / "run").glob(".stop-*"))  # the stop file is gone


def test_a_trial_that_ends_otherwise_starts_the_count_again(
    flaky: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLAKY_TRIALS", "t00-r0=1,t00-r1=1,t01-r1=1,t02-r0=1")
    result = flaky.runpytest_subprocess(
        *BASE,
        "--repeats=2",
        "--agentbench-retry-infra=0",
        "--agentbench-max-consecutive-failures=3",
    )
    result.assert_outcomes(passed=4, failed=4)  # t01-r0 came between: never 3 in a row
    assert "agentbench breaker" not in result.stdout.str()


def test_resume_codes_every_unscored_slot_again_and_keeps_the_failures_as_evidence(
    flaky: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLAKY_TRIALS", "all=1")
    flaky.runpytest_subprocess(
        *BASE,
        "--repeats=2",
        "--agentbench-retry-infra=0",
        "--agentbench-max-consecutive-failures=2",
    )
    first = recorded(flaky)
    assert {o["status"] for o in first} == {"infrastructure"} and len(first) == 2
    for tries in (flaky.path / "tries").iterdir():
        tries.unlink()
    monkeypatch.setenv("FLAKY_TRIALS", "")
    result = flaky.runpytest_subprocess(*BASE, "--repeats=2", "--agentbench-resume=run")
    result.assert_outcomes(passed=8)
    cells = {(o["task"], o["repeat"]): o for o in recorded(flaky)[2:]}
    assert len(cells) == 8 and all(o["status"] == "scored" for o in cells.values())
    summary = report(flaky)["summary"]
    assert (summary["trials"], summary["first_exact"]) == (8, 1.0)
    assert summary["infrastructure_failures"] == 2  # evidence, outside every rate
    again = flaky.runpytest_subprocess(*BASE, "--repeats=2", "--agentbench-resume=run")
    again.assert_outcomes(passed=8)
    assert "agentbench resume: 8 trials reused from" in again.stdout.str()
    assert (flaky.path / "tries" / "t00-r0").read_text() == "1"  # reused, not run again
