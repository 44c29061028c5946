"""Attempts (--retry-failures): Pass@<=N, time to correct solution, failure classes, and the
Markdown report's leaderboard and per-task cells."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.cli import main
from pytest_agentbench.report.markdown import consistency_cell, ranked, render_markdown
from pytest_agentbench.scoring.attempts import (
    attempts_summary,
    pass_at_most,
    task_class,
    time_to_solve,
    trial_class,
    ttcs_figures,
)

from conftest import write_task

DISTS = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])


def trial(
    task: str,
    repeat: int,
    walls: list[float | None],
    solved: bool,
    *,
    status: str = "scored",
    last: dict[str, Any] | None = None,
    changed: bool | None = True,
) -> dict[str, Any]:
    """A trial of len(walls) attempts, one round each; solved: its last attempt was exact."""
    rounds = [
        {
            "attempt": a,
            "round": 0,
            "exit_code": 0,
            "timed_out": False,
            "wall_s": wall or 0.0,
            "exact": solved and a == len(walls) - 1,
        }
        for a, wall in enumerate(walls)
    ]
    if rounds and last:
        rounds[-1].update(last)
    return {
        "task": task,
        "repeat": repeat,
        "status": status,
        "attempts": len(walls),
        "first_exact": bool(rounds and rounds[0]["exact"]),
        "final_exact": solved,
        "rounds": rounds,
        "attempt_log": [
            {"attempt": a, "wall_s": wall, "changed": changed} for a, wall in enumerate(walls)
        ],
    }


def test_pass_at_most_and_ttcs_by_hand() -> None:
    trials = [
        trial("a", 0, [2.0], True),  # solved first: TTCS 2
        trial("a", 1, [3.0, 5.0], True),  # solved second: TTCS 3 + 5
        trial("a", 2, [1.0, 1.0, 1.0], False),  # unsolved: no TTCS
        trial("a", 3, [None, 4.0], True),  # solved, a failed attempt's time unknown
        trial("a", 4, [9.0], False, status="infrastructure"),  # not scored: not counted
    ]
    assert [time_to_solve(o) for o in trials] == [2.0, 8.0, None, None, None]
    assert pass_at_most(trials, 1) == 1 / 4
    assert pass_at_most(trials, 2) == 3 / 4
    assert pass_at_most(trials, 3) == 3 / 4
    assert ttcs_figures(trials) == {"median": 5.0, "mean": 5.0, "solved": 3, "known": 2}
    none = trial("b", 0, [1.0, 1.0], False)
    assert ttcs_figures([none]) == {"median": None, "mean": None, "solved": 0, "known": 0}
    assert pass_at_most([], 1) is None


def test_the_summary_averages_tasks_and_pools_trials_beside() -> None:
    by_task = {
        "a": [trial("a", 0, [1.0], True), trial("a", 1, [1.0, 2.0], True)],
        "b": [trial("b", 0, [1.0, 1.0], False)],
        "c": [trial("c", 0, [1.0], False, status="provider_stop")],  # no scored trial
    }
    block = attempts_summary(by_task, 2)
    assert block["tasks"] == 2 and block["trials"] == 3 and block["max_attempts"] == 2
    assert block["pass_at_most"] == {"1": (1 / 2 + 0) / 2, "2": (1 + 0) / 2}
    assert block["pooled_pass_at_most"] == {"1": 1 / 3, "2": 2 / 3}
    assert block["ttcs_s"] == {"median": 2.0, "mean": 2.0, "solved": 2, "known": 2}


def test_an_old_record_without_attempt_times_has_no_ttcs() -> None:
    old = trial("a", 0, [1.0, 2.0], True)
    del old["attempt_log"]
    assert time_to_solve(old) is None
    assert pass_at_most([old], 2) == 1.0
    assert trial_class(old) == "solved"


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"solved": True}, "solved"),
        ({"solved": False, "last": {"timed_out": True, "exit_code": None}}, "timeout"),
        ({"solved": False, "last": {"over_disk": "too big"}, "changed": None}, "over_disk"),
        ({"solved": False, "last": {"exit_code": 3}}, "agent_exit"),
        ({"solved": False, "changed": False}, "no_change"),
        ({"solved": False, "changed": True}, "wrong_patch"),
        ({"solved": False, "changed": None}, "unclassified"),
        ({"solved": False, "status": "provider_stop"}, "provider_stop"),
        ({"solved": False, "status": "infrastructure"}, "infrastructure"),
        ({"solved": False, "status": "error"}, "harness_error"),
        ({"solved": False, "status": "budget_exhausted"}, "skipped"),
    ],
)
def test_each_way_a_trial_ends_has_its_class(kwargs: dict[str, Any], expected: str) -> None:
    assert trial_class(trial("a", 0, [1.0], **kwargs)) == expected


def test_a_task_class_is_its_most_frequent_agent_failure() -> None:
    assert task_class(["solved", "timeout", "no_change", "no_change"]) == "no_change"
    assert task_class(["no_change", "timeout"]) == "timeout"  # a tie: the documented order
    assert task_class(["solved", "infrastructure"]) == "solved"  # infrastructure is not the agent's
    assert task_class(["infrastructure", "provider_stop", "infrastructure"]) == "infrastructure"
    assert task_class([]) is None


walls = st.one_of(st.none(), st.floats(0, 1000, allow_nan=False))
trials_strategy = st.lists(
    st.tuples(st.lists(walls, min_size=1, max_size=4), st.booleans()), min_size=1, max_size=12
)


@settings(max_examples=100, deadline=None)
@given(specs=trials_strategy)
def test_pass_at_most_properties(specs: list[tuple[list[float | None], bool]]) -> None:
    trials = [trial("a", i, w, solved) for i, (w, solved) in enumerate(specs)]
    first_share = sum(o["first_exact"] for o in trials) / len(trials)
    assert pass_at_most(trials, 1) == first_share
    rates = [pass_at_most(trials, n) for n in range(1, 6)]
    assert all(low <= high for low, high in itertools.pairwise(rates))
    assert rates[-1] == sum(o["final_exact"] for o in trials) / len(trials)


@settings(max_examples=100, deadline=None)
@given(specs=trials_strategy)
def test_ttcs_is_at_least_the_solving_attempts_wall(
    specs: list[tuple[list[float | None], bool]],
) -> None:
    for index, (w, solved) in enumerate(specs):
        observation = trial("a", index, w, solved)
        ttcs = time_to_solve(observation)
        if not solved or any(v is None for v in w):
            assert ttcs is None
        else:
            assert ttcs is not None and ttcs >= w[-1]
            assert math.isclose(ttcs, sum(v for v in w if v is not None))


def task_row(outcomes: str, **figures: Any) -> dict[str, Any]:
    scored = outcomes.replace("-", "")
    share = scored.count("P") / len(scored) if scored else None
    return {
        "outcomes": outcomes,
        "trials": len(scored),
        "first_exact": share,
        "flip_rate": figures.get("flip_rate"),
        "cost_usd_cv": figures.get("cost_usd_cv"),
    }


def test_the_per_task_cell_is_rerun_benchs() -> None:
    cell = consistency_cell(task_row("PPPPF", flip_rate=0.4, cost_usd_cv=0.16))
    assert cell == "`PPPPF` 80%, flip 40%, cost CV 0.16"
    assert consistency_cell(task_row("PF-", flip_rate=1.0)) == "`PF-` 50%, flip 100%"
    assert consistency_cell(task_row("P")) == "`P` 100%, flip unknown"
    assert consistency_cell(task_row("--")) == "`--` not scored"


def test_the_leaderboard_is_ranked_best_first() -> None:
    def report(name: str, rank: int | None, score: float | None, quarantined: bool = False):
        return {
            "run": {"name": name, "rank": rank, "quarantined": quarantined},
            "summary": {"score": score},
        }

    reports = [report("q", None, 0.9, True), report("b", 2, 0.4), report("a", 1, 0.8)]
    reports.append(report("none", None, None))
    assert [r["run"]["name"] for r in ranked(reports)] == ["a", "b", "q", "none"]


# The command agent: task "t" is solved at the attempt equal to the repeat (repeat 0 at once,
# repeat 2 at its third attempt); "wrong" always writes the wrong bytes; "idle" does nothing.
AGENT = (
    'if [ "$AGENTBENCH_TASK" = t ]; then '
    '[ "$AGENTBENCH_ATTEMPT" -ge "$AGENTBENCH_REPEAT" ] && echo 2 > a.txt; '
    'elif [ "$AGENTBENCH_TASK" = wrong ]; then echo 3 > a.txt; fi; exit 0'
)


def run_retries(pytester: pytest.Pytester, dist: list[str]) -> pytest.RunResult:
    root = pytester.path / "tasks"
    for task_id in ("t", "wrong", "idle"):
        write_task(root, task_id, {"a.txt": "1\n"}, {"a.txt": "2\n"})
    return pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--agent=command",
        f"--agent-cmd={AGENT}",
        "--sandbox=tmp",
        "--repeats=3",
        "--retry-failures=2",
        f"--tasks={root}",
        "--agentbench-dir=run",
        "--agentbench-json=r.json",
        *dist,
    )


@DISTS
def test_a_run_with_retries_reports_attempts_classes_and_markdown(
    pytester: pytest.Pytester, dist: list[str]
) -> None:
    result = run_retries(pytester, dist)
    result.assert_outcomes(passed=3, failed=6)
    result.stdout.fnmatch_lines(
        [
            "*Pass@<=1 11.1%  Pass@<=2 22.2%  Pass@<=3 33.3% (9 trials, 3 tasks)  "
            "TTCS median * s, mean * s (3 of 3 solved trials timed)"
        ]
    )
    report = json.loads((pytester.path / "r.json").read_text())
    block = report["summary"]["attempts"]
    assert block["tasks"] == 3 and block["trials"] == 9 and block["max_attempts"] == 3
    assert block["pass_at_most"] == pytest.approx({"1": 1 / 9, "2": 2 / 9, "3": 3 / 9})
    assert block["ttcs_s"]["solved"] == 3 and block["ttcs_s"]["known"] == 3
    assert report["summary"]["failure_classes"] == {"solved": 3, "no_change": 3, "wrong_patch": 3}
    tasks = {t["id"]: t for t in report["tasks"]}
    assert tasks["t"]["outcomes"] == "PFF" and tasks["t"]["final_outcomes"] == "PPP"
    assert tasks["t"]["attempts"]["pass_at_most"] == pytest.approx(
        {"1": 1 / 3, "2": 2 / 3, "3": 1.0}
    )
    assert tasks["t"]["failure_class"] == "solved"
    assert tasks["wrong"]["trial_classes"] == ["wrong_patch"] * 3
    assert tasks["wrong"]["failure_class"] == "wrong_patch"
    assert tasks["idle"]["failure_class"] == "no_change"
    assert tasks["wrong"]["attempts"]["ttcs_s"] == {
        "median": None,
        "mean": None,
        "solved": 0,
        "known": 0,
    }
    for observation in report["observations"]:
        log = observation["attempt_log"]
        assert [entry["attempt"] for entry in log] == list(range(observation["attempts"]))
        walls = {
            a: sum(r["wall_s"] for r in observation["rounds"] if r["attempt"] == a)
            for a in (0, 1, 2)
        }
        for entry in log:
            assert entry["wall_s"] == pytest.approx(walls[entry["attempt"]], abs=1e-5)
        if observation["task"] == "t":
            assert observation["attempts"] == observation["repeat"] + 1
            ttcs = time_to_solve(observation)
            assert ttcs is not None and ttcs >= log[-1]["wall_s"]
    out = pytester.path / "report.md"
    assert main(["report", str(pytester.path / "run"), "--format", "md", "-o", str(out)]) == 0
    markdown = out.read_text()
    assert "Ranked by score (quality x coverage), highest first" in markdown
    lines = markdown.splitlines()
    header = next(line for line in lines if line.startswith("| rank "))
    assert "flaky tasks" in header and "pass@3" in header and "Pass@<=N" in header
    row = lines[lines.index(header) + 2]
    assert "33.3% (N=3)" in row
    cells = {line.split("|")[1].strip(): line for line in lines if line.startswith("| ")}
    assert "| `PFF` 33%, flip 67% " in cells["t"] and "| solved " in cells["t"]
    assert "| `FFF` 0%, flip 0% " in cells["wrong"] and "| wrong_patch " in cells["wrong"]
    assert "| no_change " in cells["idle"]
    assert "cost CV" not in cells["t"]  # the command agent reports no cost: no CV, never 0


def test_without_retries_there_is_no_attempts_block(pytester: pytest.Pytester) -> None:
    root = pytester.path / "tasks"
    write_task(root, "t", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--agent=oracle", f"--tasks={root}", "--agentbench-json=r.json"
    )
    result.assert_outcomes(passed=1)
    assert "Pass@<=" not in result.stdout.str()
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["summary"]["attempts"] is None and report["tasks"][0]["attempts"] is None
    assert report["tasks"][0]["trial_classes"] == ["solved"]
    assert render_markdown(report).count("Pass@<=N") == 0
