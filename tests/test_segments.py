"""Segmented trials: options, steers, the step split, identity, the arm key and task field,
and the command agent run in legs of one session (per-leg figures, the legs block)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.arms import ArmsError, load_arms
from pytest_agentbench.tasks.directory import load_directory_task
from pytest_agentbench.tasks.model import TaskError
from pytest_agentbench.tasks.segments import (
    CONTINUATION,
    LegPlan,
    parse_steer,
    plan_legs,
    split_steps,
    trial_legs,
)

from conftest import write_task

DISTS = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
STEER = "also keep line two"
# Leg 1 writes a, leg 2 appends b (exact: a b), leg 3 appends c: a later leg undoes the work.
# Each turn's leg, round and prompt go to $SEEN, outside the workspace.
AGENT = """
import json, os, sys
leg = os.environ.get("AGENTBENCH_LEG")
with open(os.environ["SEEN"], "a") as out:
    out.write(json.dumps({
        "task": os.environ["AGENTBENCH_TASK"],
        "leg": leg,
        "round": os.environ["AGENTBENCH_ROUND"],
        "feedback": "AGENTBENCH_FEEDBACK_FILE" in os.environ,
        "prompt": open(os.environ["AGENTBENCH_PROMPT_FILE"]).read(),
    }) + "\\n")
letter = {"1": "a", "2": "b", "3": "c"}.get(leg)
if letter:
    with open("out.txt", "a") as handle:
        handle.write(letter + "\\n")
usage = {"input": 100 * int(leg or 9), "output": 10}
json.dump(usage, open(os.environ["AGENTBENCH_USAGE_FILE"], "w"))
sys.exit(int(os.environ.get("FAIL_LEG") == leg))
"""


def test_steer_parsing_names_the_option_and_the_fix() -> None:
    assert parse_steer("also handle empty input@2", 3) == (2, "also handle empty input")
    assert parse_steer("mail me@home@3", 3) == (3, "mail me@home")
    with pytest.raises(ValueError, match=r"--agentbench-steer 'x': expected TEXT@LEG"):
        parse_steer("x", 3)
    with pytest.raises(ValueError, match=r"leg 1 is not one of the later legs 2\.\.3"):
        parse_steer("x@1", 3)
    with pytest.raises(ValueError, match=r"raise --agentbench-segments to 4"):
        parse_steer("x@4", 3)
    with pytest.raises(ValueError, match=r"--agentbench-segments N \(N >= 2\)"):
        parse_steer("x@2", 1)


@given(st.integers(1, 10_000), st.integers(1, 50))
def test_the_step_budget_is_divided_never_multiplied(max_steps: int, legs: int) -> None:
    if max_steps < legs:
        with pytest.raises(ValueError, match="cannot be split"):
            split_steps(max_steps, legs)
        return
    shares = split_steps(max_steps, legs)
    assert len(shares) == legs and sum(s or 0 for s in shares) == max_steps
    assert all(s is not None and s >= 1 for s in shares)
    assert len(set(shares[:-1])) <= 1  # equal shares, the remainder on the last
    assert shares[-1] == max_steps // legs + max_steps % legs


def test_plan_prompts_and_step_limits() -> None:
    plan = plan_legs(3, ((2, STEER), (5, "never")), 10)
    assert [plan.prompt(leg, "TASK") for leg in (1, 2, 3)] == ["TASK", STEER, CONTINUATION]
    assert [plan.step_limit(turn, 10) for turn in range(5)] == [3, 3, 4, 10, 10]
    assert [plan.leg_of(turn) for turn in range(4)] == [1, 2, 3, None]
    assert split_steps(None, 2) == (None, None) and LegPlan().legs == 1
    assert trial_legs(1, None, None) == 1 and trial_legs(1, 2, None) == 2
    assert trial_legs(1, 2, 4) == 4


def test_identity_keeps_segmented_runs_apart() -> None:
    plain, legs = Settings(agent="mock"), Settings(agent="mock", segments=3)
    steered = Settings(agent="mock", segments=3, steers=((2, STEER),))
    assert "segments" not in plain.identity() and "steers" not in plain.identity()
    assert legs.identity()["segments"] == 3 and steered.identity()["steers"] == [[2, STEER]]
    assert len({plain.config_hash(), legs.config_hash(), steered.config_hash()}) == 3


def test_arm_key_segments(tmp_path: Path) -> None:
    path = tmp_path / "arms.toml"
    path.write_text("[arm.legs]\nsegments = 3\n[arm.plain]\nsegments = 1\n")
    vanilla, legs, plain = load_arms(path)
    assert (vanilla.segments, legs.segments, plain.segments) == (None, 3, 1)
    assert legs.identity != plain.identity
    assert legs.configuration_fields()["segments"] == 3
    path.write_text("[arm.legs]\nsegments = 0\n")
    with pytest.raises(ArmsError, match=r"\[arm.legs\] segments: must be a whole number"):
        load_arms(path)
    path.write_text("[arm.legs]\nsegment = 3\n")
    with pytest.raises(ArmsError, match=r"arms.toml:2: unknown key `segment`.*`segments`"):
        load_arms(path)


def test_task_field_segments(tmp_path: Path) -> None:
    plain = load_directory_task(write_task(tmp_path, "plain", {"a": "1"}, {"a": "2"}))
    legs = load_directory_task(
        write_task(tmp_path, "legs", {"a": "1"}, {"a": "2"}, toml_extra="segments = 2\n")
    )
    assert (plain.segments, legs.segments) == (None, 2)
    assert plain.fixture_hash != legs.fixture_hash  # the same files, another experiment
    bad = write_task(tmp_path, "bad", {"a": "1"}, {"a": "2"}, toml_extra="segments = 0\n")
    with pytest.raises(TaskError, match="field 'segments' must be >= 1"):
        load_directory_task(bad)
    typo = write_task(tmp_path, "typo", {"a": "1"}, {"a": "2"}, toml_extra="segment = 2\n")
    with pytest.raises(TaskError, match=r"task.toml:2: unknown key `segment`.*`segments`"):
        load_directory_task(typo)


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str):
    seen = pytester.path / "seen.jsonl"
    monkeypatch.setenv("SEEN", str(seen))
    (pytester.path / "agent.py").write_text(AGENT)
    result = pytester.runpytest_subprocess(
        "--agent=command",
        "--sandbox=tmp",
        f"--agent-cmd={sys.executable} agent.py",
        "--agent-opt=env=SEEN,FAIL_LEG",
        f"--tasks={pytester.path / 'tasks'}",
        "--agentbench-json=report.json",
        "-p",
        "no:cacheprovider",
        *args,
    )
    report_path = pytester.path / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    lines = seen.read_text().splitlines() if seen.exists() else []
    return result, report, [json.loads(line) for line in lines]


@DISTS
def test_command_agent_runs_three_legs_of_one_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, dist: list[str]
) -> None:
    for name in ("one", "two"):
        write_task(pytester.path / "tasks", name, {}, {"out.txt": "a\nb\n"}, prompt="TASK")
    result, report, seen = _run(
        pytester,
        monkeypatch,
        "--agentbench-segments=3",
        f"--agentbench-steer={STEER}@2",
        *dist,
    )
    result.assert_outcomes(failed=2)  # leg 3 undid the exact tree of leg 2
    for name in ("one", "two"):
        turns = [s for s in seen if s["task"] == name]
        assert [(t["leg"], t["round"], t["prompt"]) for t in turns] == [
            ("1", "0", "TASK"),
            ("2", "1", STEER),
            ("3", "2", CONTINUATION),
        ]
        assert not any(t["feedback"] for t in turns)
    for obs in report["observations"]:
        legs = obs["legs"]
        assert [leg["exact"] for leg in legs] == [False, True, False]
        assert [leg["prompt"] for leg in legs] == ["task", "steer", "continuation"]
        assert [leg["tokens"]["input"] for leg in legs] == [100, 200, 300]
        assert all(leg["requests"] is None for leg in legs)  # unmetered: unknown, not 0
        assert obs["tokens"]["input"] == 600 and len(obs["rounds"]) == 1
        assert obs["rounds"][0]["wall_s"] == pytest.approx(
            sum(leg["wall_s"] for leg in legs), abs=1e-5
        )
    block = report["legs"]
    assert block["trials"] == 2 and [row["exact"] for row in block["legs"]] == [0, 2, 0]
    assert block["legs"][1]["prompts"] == ["steer"]
    assert block["degradation"]["regressed"] == 2
    assert block["degradation"]["tokens_last_to_first"] == {"ratio": 2.8182, "counted": 2}
    result.stdout.fnmatch_lines(
        ["legs of 2 segmented trials*", "*2*steer*2*2 (100%)*", "across legs: 2 exact after*"]
    )


def test_a_failed_leg_ends_the_trial_and_recoveries_follow_the_last_leg(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_task(pytester.path / "tasks", "t", {}, {"out.txt": "x\n"}, prompt="TASK")
    monkeypatch.setenv("FAIL_LEG", "2")
    _, report, seen = _run(pytester, monkeypatch, "--agentbench-segments=3")
    assert [s["leg"] for s in seen] == ["1", "2"]
    (obs,) = report["observations"]
    assert [leg["exit_code"] for leg in obs["legs"]] == [0, 1]
    assert report["legs"]["degradation"]["ended_early"] == 1
    monkeypatch.delenv("FAIL_LEG")
    (pytester.path / "seen.jsonl").unlink()
    _, report, seen = _run(
        pytester, monkeypatch, "--agentbench-segments=2", "--oracle-recoveries=1"
    )
    assert [(s["leg"], s["round"], s["feedback"]) for s in seen] == [
        ("1", "0", False),
        ("2", "1", False),
        (None, "2", True),
    ]
    (obs,) = report["observations"]
    assert [r["round"] for r in obs["rounds"]] == [0, 1] and len(obs["legs"]) == 2


def test_an_unsegmented_run_has_no_legs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_task(pytester.path / "tasks", "t", {}, {"out.txt": "a\n"}, prompt="TASK")
    result, report, seen = _run(pytester, monkeypatch)
    result.assert_outcomes(passed=1)
    assert [s["leg"] for s in seen] == ["1"]
    assert "legs" not in report and "legs" not in report["observations"][0]
    assert "segments" not in report["run"]
    assert "legs of" not in result.stdout.str()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agentbench-steer=x@2"], "*--agentbench-steer 'x@2': a steer needs a later leg*"),
        (
            ["--agentbench-segments=2", "--agentbench-steer=x@3"],
            "*leg 3 is not one of the later legs 2..2*raise --agentbench-segments to 3*",
        ),
        (
            ["--agentbench-segments=3", "--agentbench-steer=x@2", "--agentbench-steer=y@2"],
            "*leg 2 is steered twice*",
        ),
        (["--agentbench-segments=0"], "*--agentbench-segments: expected an integer >= 1*"),
    ],
)
def test_bad_segment_options_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    write_task(pytester.path / "tasks", "t", {}, {"out.txt": "a\n"})
    result = pytester.runpytest_subprocess(
        "--agent=nop", f"--tasks={pytester.path / 'tasks'}", "-p", "no:cacheprovider", *args
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_ini_gives_segments_and_steers(pytester: pytest.Pytester) -> None:
    write_task(pytester.path / "tasks", "t", {}, {"out.txt": "a\n"})
    pytester.makeini("[pytest]\nagentbench_segments = 2\nagentbench_steer =\n    go on@2\n")
    result = pytester.runpytest_subprocess(
        "--agent=nop", f"--tasks={pytester.path / 'tasks'}", "--agentbench-json=r.json"
    )
    result.stdout.fnmatch_lines(["*segments 2 (steered legs 2)*"])
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["run"]["segments"] == 2 and report["run"]["steers"] == [[2, "go on"]]
    assert [leg["prompt"] for leg in report["observations"][0]["legs"]] == ["task", "steer"]


def test_resume_refuses_other_segments(pytester: pytest.Pytester) -> None:
    write_task(pytester.path / "tasks", "t", {}, {"out.txt": "a\n"})
    base = ["--agent=nop", f"--tasks={pytester.path / 'tasks'}", "-p", "no:cacheprovider"]
    pytester.runpytest_subprocess(*base, "--agentbench-segments=2", "--agentbench-dir=run")
    same = pytester.runpytest_subprocess(*base, "--agentbench-resume=run")
    assert same.ret == pytest.ExitCode.TESTS_FAILED  # the recorded legs: resumed, not refused
    result = pytester.runpytest_subprocess(
        *base, "--agentbench-resume=run", "--agentbench-segments=3"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*segments: recorded 2, now 3*"])
    assert not re.search(r"\d+ (passed|failed)", result.stdout.str())  # no trial ran
