"""Run control: kept workspaces, budgets (and resuming after one), `agentbench status`, CSV."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tiny_tasks import TINY_RUN, slow_suite

from pytest_agentbench.report.csvfile import COLUMNS, render_csv
from pytest_agentbench.run.store import read_observations
from pytest_agentbench.trial.keep import FILE_LIMIT, OMITTED_FILE

DIST = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
BASE = TINY_RUN


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Path:
    return slow_suite(pytester)


def observations(run: Path) -> list[dict]:
    recorded, notice = read_observations(run / "observations.jsonl")
    assert notice is None
    return recorded


def agentbench(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The console script, as a user runs it."""
    return subprocess.run(
        ["agentbench", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def kept(run: Path) -> set[tuple[str, int]]:
    return {
        (path.parent.name.rsplit("-r", 1)[0], int(path.parent.name.rsplit("-r", 1)[1]))
        for path in (run / "trials").glob("*/workspace")
    }


@DIST
def test_keep_failed_keeps_exactly_the_trials_not_exact_at_the_end(
    pytester: pytest.Pytester, suite: Path, dist: list[str]
) -> None:
    pytester.runpytest_subprocess(*BASE, "--agentbench-dir=run", "--agentbench-keep=failed", *dist)
    recorded = observations(pytester.path / "run")
    failed = {(o["task"], o["repeat"]) for o in recorded if not o["final_exact"]}
    assert failed and len(failed) < len(recorded)
    assert kept(pytester.path / "run") == failed
    for task, repeat in failed:  # the final workspace itself, not the input
        workspace = pytester.path / "run" / "trials" / f"{task}-r{repeat}" / "workspace"
        expected = (suite / task / "expected" / "notes.txt").read_bytes()
        notes = workspace / "notes.txt"
        assert (
            not notes.exists()
            or notes.read_bytes() != expected
            or any(p.name != "notes.txt" for p in workspace.iterdir())
        )


def test_keep_all_keeps_every_trial_and_none_keeps_nothing(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.runpytest_subprocess(*BASE, "--agentbench-dir=all", "--agentbench-keep=all")
    assert len(kept(pytester.path / "all")) == 24
    pytester.runpytest_subprocess(*BASE, "--agentbench-dir=none")
    assert kept(pytester.path / "none") == set()


def test_kept_workspace_holds_symlinks_unfollowed_empty_dirs_and_bounds_sizes(
    pytester: pytest.Pytester, suite: Path
) -> None:
    big = FILE_LIMIT + 1
    command = (
        "ln -s /etc/hostname link && ln -s ../outside dangling && mkdir -p empty/inner && "
        f"head -c {big} /dev/zero > big.bin && mkfifo pipe"
    )
    result = pytester.runpytest_subprocess(
        "-p",
        "no:randomly",
        "--agent=command",
        f"--agent-cmd={command}",
        "--sandbox=tmp",
        "--tasks=tiny-tasks",
        "-k",
        "t00",
        "--agentbench-dir=run",
        "--agentbench-keep=failed",
    )
    result.assert_outcomes(failed=1)
    trial = pytester.path / "run" / "trials" / "t00-r0"
    workspace = trial / "workspace"
    assert os.readlink(workspace / "link") == "/etc/hostname"
    assert os.readlink(workspace / "dangling") == "../outside"
    assert (workspace / "empty" / "inner").is_dir()
    assert (workspace / "notes.txt").read_text() == "task 0\nstatus: draft\n"
    assert not (workspace / "big.bin").exists() and not (workspace / "pipe").exists()
    omitted = (trial / OMITTED_FILE).read_text().splitlines()
    assert omitted == [
        f"big.bin: {big} bytes, over the limit of {FILE_LIMIT}",
        "pipe: not a regular file, directory or symlink",
    ]


def test_bad_keep_and_budget_values_are_usage_errors(pytester: pytest.Pytester) -> None:
    for option, words in (
        ("--agentbench-keep=some", "choose one of none, failed, all"),
        ("--agentbench-budget-usd=0", "expected a number of USD > 0"),
        ("--agentbench-budget-tokens=lots", "expected an integer >= 1"),
    ):
        result = pytester.runpytest_subprocess("--agent=mock", option)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert words in result.stderr.str()


def cost_order_budget(pytester: pytest.Pytester, suite: Path, trials: int) -> float:
    """A USD budget the serial run reaches exactly at its `trials`-th trial."""
    pytester.runpytest_subprocess(*BASE, "--agentbench-dir=ref", "--agentbench-json=ref.json")
    costs = [o["cost_usd"] for o in observations(pytester.path / "ref")]
    return sum(costs[: trials - 1]) + costs[trials - 1] / 2


@DIST
def test_budget_stops_starting_trials_and_resume_continues_them(
    pytester: pytest.Pytester, suite: Path, dist: list[str]
) -> None:
    budget = cost_order_budget(pytester, suite, 5)
    result = pytester.runpytest_subprocess(
        *BASE, "--agentbench-dir=run", f"--agentbench-budget-usd={budget}", *dist
    )
    assert result.ret != 0
    recorded = observations(pytester.path / "run")
    ran = [o for o in recorded if o["status"] == "scored"]
    not_started = [o for o in recorded if o["status"] == "budget_exhausted"]
    assert len(ran) + len(not_started) == 24
    # The spend reaches the budget at the reaching-th trial reported: serially the fifth; under
    # -n 2 the trials report in another order, and each worker may have one more running and
    # one more finished whose report the controller had not read when the gate closed.
    spend = [sum(o["cost_usd"] for o in ran[: k + 1]) for k in range(len(ran))]
    reaching = next(k for k, total in enumerate(spend) if total >= budget) + 1
    if dist:
        assert reaching <= len(ran) <= reaching + 2 * 2
    else:
        assert reaching == len(ran) == 5
    assert sum(o["cost_usd"] for o in ran) >= budget
    assert all("USD budget reached" in o["cause"] for o in not_started)
    spent = sum(o["cost_usd"] for o in ran)
    result.stdout.fnmatch_lines(
        [
            f"agentbench budget {budget:g} USD: spent {spent:.4f} USD and * tokens known; "
            f"budget reached: {len(not_started)} trials not started (budget_exhausted)",
            "continue with: pytest * --agentbench-resume run",
        ]
    )
    assert not list((pytester.path / "run").glob(".stop-*")), "the stop file is removed"
    report = json.loads(pytester.path.joinpath("ref.json").read_text())
    assert report["summary"]["tasks_declared"] == 12

    resumed = pytester.runpytest_subprocess(
        *BASE,
        "--agentbench-resume=run",
        "--agentbench-budget-usd=100",
        "--agentbench-json=resumed.json",
        *dist,
    )
    resumed.stdout.fnmatch_lines([f"agentbench resume: {len(ran)} trials reused from *run"])
    assert (
        json.loads(pytester.path.joinpath("resumed.json").read_text())["summary"]
        == (report["summary"])
    )


def test_budget_exhausted_trials_are_neither_scored_nor_observed(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.runpytest_subprocess(
        *BASE, "--agentbench-budget-tokens=1", "--agentbench-json=out.json", "-k", "t00 or t01"
    )
    summary = json.loads(pytester.path.joinpath("out.json").read_text())["summary"]
    assert summary["trials"] == 1 and summary["tasks_observed"] == 1
    assert summary["tasks_selected"] == 2 and summary["tasks_declared"] == 12  # -k narrows
    assert summary["coverage"] == 1 / 12
    assert summary["budget_exhausted"] == 3


@DIST
def test_plan_json_prints_the_plan_alone_on_stdout_and_runs_nothing(
    pytester: pytest.Pytester, suite: Path, dist: list[str]
) -> None:
    result = pytester.runpytest_subprocess(
        *BASE, "--agentbench-plan=json", "--agentbench-budget-usd=2", "-k", "t00 or t01", *dist
    )
    assert result.ret == pytest.ExitCode.OK
    plan = json.loads(result.stdout.str())
    assert plan["schema"] == "agentbench-plan/1"
    assert plan["trial_ids"] == [f"tiny-tasks/t0{t}::r{r}" for t in (0, 1) for r in (0, 1)]
    assert (plan["tasks"], plan["trials"], plan["repeats"], plan["arms"]) == (2, 4, 2, None)
    assert plan["agent_sessions"] == {"at_least": 4, "at_most": 4}
    assert plan["agent"]["name"] == "mock" and plan["agent"]["cli_version"] == "builtin"
    assert plan["metered"] is False and plan["sandbox"]["kind"] == "tmp"
    assert plan["budget"] == {"usd": 2.0, "tokens": None}
    result.stderr.fnmatch_lines(["*test session starts*", "*4/24 tests collected*"])
    assert not (pytester.path / ".agentbench").exists(), "nothing ran"
    other = pytester.runpytest_subprocess(*BASE, "--agentbench-plan=yaml")
    assert other.ret == pytest.ExitCode.USAGE_ERROR
    assert "--agentbench-plan 'yaml': the one format is json" in other.stderr.str()


def test_status_of_a_finished_run_as_text_and_json(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.runpytest_subprocess(*BASE, "--agentbench-dir=run", "--agentbench-budget-tokens=9000")
    recorded = observations(pytester.path / "run")
    scored = [o for o in recorded if o["status"] == "scored"]
    first = sum(o["first_exact"] for o in scored)
    shown = agentbench(pytester.path, "status", "run", "--json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["schema"] == "agentbench-status/1"
    assert doc["state"] == "finished" and doc["exit_status"] == 1
    assert doc["trials"]["planned"] == 24
    assert doc["trials"]["done"] == len(scored)
    assert doc["trials"]["not_started"] == 24 - len(scored)
    assert doc["first_exact"] == {
        "passed": first,
        "scored": len(scored),
        "rate": first / len(scored),
        "no_solution_left_out": 0,  # every tiny task has an expected tree
    }
    tokens = sum(o["tokens"]["input"] + o["tokens"]["output"] for o in scored)
    assert doc["spend"]["tokens"] == tokens and doc["spend"]["tokens_unknown"] == 0
    assert doc["spend"]["cost_usd"] == pytest.approx(sum(o["cost_usd"] for o in scored))
    assert doc["running"] == [] and doc["eta_s"] is None
    text = agentbench(pytester.path, "status", "run").stdout
    assert f"agent mock  model default: {len(scored)}/24 trials done" in text
    assert f"first exact so far: {first}/{len(scored)} scored" in text


def test_status_of_a_missing_run_directory_is_one_line(pytester: pytest.Pytester) -> None:
    shown = agentbench(pytester.path, "status", "nowhere")
    assert shown.returncode == 2
    assert shown.stderr.startswith("agentbench status: nowhere: not a run directory")
    assert "Traceback" not in shown.stderr


@DIST
def test_status_of_a_running_run_shows_running_trials_and_eta(
    pytester: pytest.Pytester, suite: Path, dist: list[str]
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", *BASE, "--agentbench-dir=run", *dist],
        cwd=pytester.path,
        env={**os.environ, "AGENTBENCH_TEST_DELAY": "0.3"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline, "the run never showed progress"
            doc = json.loads(agentbench(pytester.path, "status", "run", "--json").stdout or "{}")
            if doc and doc["state"] == "running" and doc["trials"]["done"] >= 2 and doc["running"]:
                break  # (between two trials of a worker, none runs for a moment)
            time.sleep(0.2)
        assert doc["trials"]["planned"] == 24
        assert len(doc["running"]) <= (2 if dist else 1)
        assert all(
            r["trial"].startswith("tiny-tasks/t") and r["age_s"] >= 0 for r in doc["running"]
        )
        assert doc["eta_s"] is not None and doc["eta_s"] > 0
        watched = agentbench(pytester.path, "status", "run", "--watch", "--json", "--interval=0.2")
        frames = [json.loads(line) for line in watched.stdout.splitlines()]
        assert frames[-1]["state"] == "finished" and frames[-1]["trials"]["done"] == 24
        assert all(frame["state"] == "running" for frame in frames[:-1])
    finally:
        process.wait(timeout=120)


def test_status_says_stopped_when_the_controller_was_killed(
    pytester: pytest.Pytester, suite: Path
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", *BASE, "--agentbench-dir=run"],
        cwd=pytester.path,
        env={**os.environ, "AGENTBENCH_TEST_DELAY": "0.3"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    progress = pytester.path / "run" / "progress.jsonl"
    deadline = time.monotonic() + 60
    while not (progress.exists() and b'"end"' in progress.read_bytes()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.kill()
    process.wait(timeout=30)
    doc = json.loads(agentbench(pytester.path, "status", "run", "--json").stdout)
    assert doc["state"] == "stopped" and doc["running"] == [] and doc["eta_s"] is None


def test_csv_columns_keep_their_order() -> None:
    """Appending is allowed, reordering is not: readers address columns by position."""
    assert COLUMNS[:27] == (
        "configuration",
        "task",
        "repeat",
        "status",
        "cause",
        "attempts",
        "rounds",
        "first_exact",
        "final_exact",
        "eof_normalized",
        "tokens.input",
        "tokens.cached_input",
        "tokens.output",
        "tokens.reasoning",
        "cost_usd",
        "wall_s",
        "category",
        "tags",
        "fixture_hash",
        "agent.name",
        "agent.session_id",
        "agent.model_reported",
        "agent.turns",
        "agent.tool_calls",
        "trial_id",
        "final_eof_normalized",
        "reused",
    )
    assert len(set(COLUMNS)) == len(COLUMNS)


def test_csv_rows_carry_the_verdict_and_an_unknown_one_stays_empty() -> None:
    claimed = {"task": "t", "repeat": 0, "no_solution": True, "verdict": "incomplete",
               "verdict_reason": "the spec, is missing"}  # fmt: skip
    older = {"task": "t", "repeat": 1}  # recorded before the fields existed
    document = {"run": {"agent": "command"}, "observations": [claimed, older]}
    header, *rows = csv.reader(io.StringIO(render_csv(document)))
    tail = header.index("no_solution")
    end = tail + 3  # new columns come after: a column's position never moves
    assert header[tail:end] == ["no_solution", "verdict", "verdict_reason"]
    assert [row[tail:end] for row in rows] == [
        ["true", "incomplete", "the spec, is missing"],
        ["", "", ""],
    ]


def test_csv_export_has_one_row_per_trial(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.runpytest_subprocess(*BASE, "--agentbench-dir=run", "--agentbench-budget-tokens=20000")
    recorded = {(o["task"], o["repeat"]): o for o in observations(pytester.path / "run")}
    shown = agentbench(pytester.path, "report", "run", "--format", "csv")
    assert shown.returncode == 0, shown.stderr
    rows = list(csv.DictReader(io.StringIO(shown.stdout)))
    assert list(rows[0]) == list(COLUMNS) and len(rows) == 24
    for row in rows:
        observation = recorded[(row["task"], int(row["repeat"]))]
        assert row["configuration"] == "mock" and row["status"] == observation["status"]
        assert row["first_exact"] == str(observation["first_exact"]).lower()
        if observation["status"] == "scored":
            assert float(row["cost_usd"]) == observation["cost_usd"]
            assert int(row["tokens.input"]) == observation["tokens"]["input"]
            assert int(row["rounds"]) == len(observation["rounds"])
        else:  # unknown is an empty cell, never 0
            assert row["cost_usd"] == row["tokens.input"] == row["wall_s"] == ""
    written = agentbench(pytester.path, "report", "run", "--format", "csv", "-o", "out/t.csv")
    assert written.returncode == 0
    assert (pytester.path / "out" / "t.csv").read_text() == shown.stdout
