"""Coverage counts the declared tasks; runs of one configuration pool, each trial once; fixture
conflicts never pool; provider stops stay evidence and quarantine a configuration.

Figures are checked against brute-force computations on hand-made observations, and against
real runs (pytester, -n 0 and -n 2) and `agentbench merge` in a subprocess.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny_tasks import make_tasks

from pytest_agentbench.report.terminal import summary_lines
from pytest_agentbench.run.pooling import pool, quarantine, trial_id, with_trial_ids
from pytest_agentbench.scoring.configurations import load_source, merge
from pytest_agentbench.scoring.document import build_report
from pytest_agentbench.scoring.merged import build_document
from pytest_agentbench.settings import Settings

BASE = ["-p", "no:randomly", "--agent=mock", "--sandbox=tmp", "--tasks=tiny-tasks"]


def trial(task: str, repeat: int, first: bool, run: str = "run", attempt: int = 0, **kw: Any):
    """A hand-made Observation with its trial id."""
    return {
        "task": task,
        "repeat": repeat,
        "status": kw.pop("status", "scored"),
        "cause": kw.pop("cause", None),
        "attempts": 1,
        "first_exact": first,
        "final_exact": first,
        "eof_normalized": first,
        "rounds": [],
        "tokens": None,
        "cost_usd": None,
        "wall_s": 1.0,
        "trial_id": trial_id(run, task, repeat, attempt),
        **kw,
    }


def report_of(observations: list[dict[str, Any]], declared: list[str], repeats: int = 2, **kw):
    meta = {t: {"category": "", "tags": [], "fixture_hash": None} for t in declared}
    return build_report(
        Settings(agent="mock", repeats=repeats), {}, meta, observations, "", "", **kw
    )


# Coverage


@settings(max_examples=60, deadline=None)
@given(
    declared=st.integers(1, 12),
    picks=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 2), st.booleans()), max_size=20),
)
def test_coverage_is_the_share_of_declared_tasks_observed(
    declared: int, picks: list[tuple[int, int, bool]]
) -> None:
    ids = [f"t{i:02d}" for i in range(declared)]
    observations = [trial(ids[i % declared], r, ok) for i, r, ok in picks]
    selected = {o["task"] for o in observations}
    summary = report_of(observations, ids, selected=selected)["summary"]
    observed = {o["task"] for o in pool(observations)}
    assert summary["tasks_declared"] == declared
    assert summary["tasks_selected"] == len(selected)
    assert summary["tasks_observed"] == len(observed)
    assert summary["coverage"] == pytest.approx(len(observed) / declared)
    if summary["quality"] is not None:
        assert summary["score"] == pytest.approx(summary["quality"] * len(observed) / declared)


def test_a_perfect_run_of_one_task_of_271_scores_and_says_1_of_271() -> None:
    ids = [f"t{i:03d}" for i in range(271)]
    report = report_of([trial("t000", 0, True)], ids, repeats=1, selected={"t000"})
    summary = report["summary"]
    assert summary["quality"] == 1.0
    assert summary["coverage"] == 1 / 271 and summary["score"] == 1 / 271
    lines = summary_lines(report)
    assert any("coverage 0.4% (1 of 271 declared tasks)" in line for line in lines)
    assert "1 of 271 declared tasks selected; score counts the declared set" in lines


def test_a_task_observed_but_not_declared_adds_nothing_to_coverage() -> None:
    summary = report_of([trial("a", 0, True), trial("x", 0, True)], ["a", "b"])["summary"]
    assert summary["coverage"] == 0.5 and summary["tasks_observed"] == 1


# Pooling

trial_keys = st.tuples(
    st.sampled_from(["run-a", "run-b"]),
    st.sampled_from(["a", "b", "c"]),
    st.integers(0, 2),
    st.integers(0, 1),
    st.booleans(),
)


@settings(max_examples=80, deadline=None)
@given(keys=st.lists(trial_keys, min_size=1, max_size=25), repeats=st.integers(1, 4))
def test_pooled_trials_count_once_and_per_task_figures_use_all_of_them(
    keys: list[tuple[str, str, int, int, bool]], repeats: int
) -> None:
    """A trial id given twice counts once; n is every distinct trial; k stays the repeats."""
    outcome = {}  # the first record of a trial id is the trial
    for run, task, repeat, attempt, ok in keys:
        outcome.setdefault((run, task, repeat, attempt), ok)
    observations = [trial(t, r, ok, run, a) for run, t, r, a, ok in keys]
    by_task = {task: [ok for (_, t, _, _), ok in outcome.items() if t == task] for task in "abc"}
    report = report_of(observations, ["a", "b", "c"], repeats=repeats)
    assert len(report["observations"]) == len(outcome)
    assert report["summary"]["trials"] == len(outcome) and report["summary"]["k"] == repeats
    for row in report["tasks"]:
        outs = by_task[row["id"]]
        n, c = len(outs), sum(outs)
        assert row["trials"] == n
        assert row["first_exact"] == (None if n == 0 else pytest.approx(c / n))
        draws = list(itertools.combinations(outs, repeats))
        if n < repeats:  # pass@k of k trials drawn from fewer than k: undefined
            assert row["pass_at_k"] is None and row["pass_hat_k"] is None
        else:
            assert row["pass_at_k"] == pytest.approx(sum(map(any, draws)) / len(draws))
            assert row["pass_hat_k"] == pytest.approx(sum(map(all, draws)) / len(draws))


def test_a_status_record_leaves_the_pool_when_a_scored_trial_fills_its_slot() -> None:
    error = trial("a", 0, False, "run-a", status="error", cause="broken")
    stop = trial("a", 0, False, "run-a", 1, status="provider_stop", cause="http 429")
    scored = trial("a", 0, True, "run-b")
    assert pool([error, stop, scored]) == [stop, scored]
    assert pool([error]) == [error]


def test_records_without_ids_get_the_id_their_position_implies() -> None:
    records = [trial("a", 0, False), trial("a", 1, True), trial("a", 0, True)]
    for record in records:
        del record["trial_id"]
    named = with_trial_ids(records, "r1")
    assert [o["trial_id"] for o in named] == ["r1/a/r0/a0", "r1/a/r1/a0", "r1/a/r0/a1"]
    assert "trial_id" not in records[0]  # the caller's records are left as they were


def test_trials_of_one_task_with_different_fixture_hashes_are_separate_cells() -> None:
    observations = [
        trial("a", 0, True, fixture_hash="h1"),
        trial("a", 1, True, fixture_hash="h1"),
        trial("a", 0, False, "other", fixture_hash="h2"),
        trial("b", 0, True, fixture_hash="hb"),
        trial("b", 1, False, fixture_hash="hb"),
    ]
    report = report_of(observations, ["a", "b"])
    alone = report_of([o for o in observations if o["task"] == "b"], ["a", "b"])
    assert report["summary"]["fixture_conflicts"] == ["a"]
    row = next(t for t in report["tasks"] if t["id"] == "a")
    assert row["fixture_conflict"] and row["trials"] == 0
    assert [
        (c["fixture_hash"], c["trials"], c["first_exact"]) for c in report["conflicts"][0]["cells"]
    ] == [("h1", 2, 1.0), ("h2", 1, 0.0)]
    for key in ("first_exact", "coverage", "score", "trials"):  # a conflict is not scored
        assert report["summary"][key] == alone["summary"][key]
    assert len(report["observations"]) == 5  # and every trial stays in the record
    assert any(line.startswith("fixture conflict in a (") for line in summary_lines(report))


# Quarantine


@pytest.mark.parametrize(
    ("trials", "stops", "quarantined"),
    [
        (49, 49, False),  # fewer than 50 trials never quarantine
        (50, 10, True),  # exactly 20% of exactly 50
        (50, 9, False),
        (1000, 199, False),  # 19.9%
        (1000, 200, True),  # 20.0%
    ],
)
def test_quarantine_thresholds(trials: int, stops: int, quarantined: bool) -> None:
    observations = [
        trial(f"t{i}", 0, True, status="provider_stop" if i < stops else "scored", cause="429")
        for i in range(trials)
    ]
    observations.append(trial("t0", 1, False, status="error", cause="no agent"))  # not a trial
    figures = quarantine(observations)
    assert figures["quarantined"] is quarantined
    assert (figures["trials"], figures["provider_stops"]) == (trials, stops)
    assert figures["share"] == pytest.approx(stops / trials)
    assert (figures["reason"] is not None) is quarantined


def test_a_stop_without_a_machine_readable_cause_does_not_count() -> None:
    observations = [trial(f"t{i}", 0, True) for i in range(40)]
    observations += [trial(f"s{i}", 0, False, status="provider_stop") for i in range(10)]
    assert quarantine(observations)["provider_stops"] == 0


def test_a_quarantined_configuration_keeps_its_figures_but_gets_no_rank() -> None:
    def config_report(model: str, stops: int) -> dict[str, Any]:
        observations = [
            trial(f"t{i}", r, True, model, status="provider_stop" if i < stops else "scored",
                  cause="http 429")
            for i in range(25) for r in (0, 1)
        ]  # fmt: skip
        return report_of(observations, [f"t{i}" for i in range(25)])

    fine, stopped = config_report("a", 0), config_report("b", 5)  # 10 stops of 50 trials
    assert fine["run"]["quarantined"] is False and fine["run"]["quarantine"]["reason"] is None
    assert stopped["run"]["quarantined"] is True
    assert stopped["run"]["quarantine"]["provider_stops"] == 10
    assert stopped["summary"]["first_exact"] == 1.0 and stopped["summary"]["trials"] == 40


# Real runs


def run_json(pytester: pytest.Pytester, *args: str) -> dict[str, Any]:
    pytester.runpytest_subprocess(*BASE, "--agentbench-json=report.json", *args)
    report: dict[str, Any] = json.loads((pytester.path / "report.json").read_text())
    return report


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize(
    ("narrowing", "selected"),
    [
        (["-k", "t00 or t03"], ["t00", "t03"]),
        (["--deselect", "tiny-tasks/t01"], [f"t{i:02d}" for i in range(6) if i != 1]),
        (["--agentbench-shard=2/3"], ["t01", "t04"]),
    ],
    ids=["k", "deselect", "shard"],
)
def test_narrowing_a_run_keeps_the_declared_tasks(
    pytester: pytest.Pytester, dist: list[str], narrowing: list[str], selected: list[str]
) -> None:
    make_tasks(pytester.path, 6)
    report = run_json(pytester, "--repeats=2", "--agentbench-dir=run", *narrowing, *dist)
    summary = report["summary"]
    assert (summary["tasks_declared"], summary["tasks_selected"]) == (6, len(selected))
    assert summary["tasks_observed"] == len(selected)
    assert summary["coverage"] == pytest.approx(len(selected) / 6)
    assert len(report["tasks"]) == 6 and report["run"]["tasks_selected"] == selected
    run = json.loads((pytester.path / "run" / "run.json").read_text())
    assert sorted(run["tasks"]) == [f"t{i:02d}" for i in range(6)]
    assert run["tasks_selected"] == selected
    ids = [o["trial_id"] for o in report["observations"]]
    assert len(set(ids)) == len(ids) == 2 * len(selected)
    assert all(i.startswith(run["run_id"] + "/") for i in ids)


def agentbench(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_agentbench.cli", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


def test_merge_pools_runs_of_one_configuration_each_trial_once(pytester: pytest.Pytester) -> None:
    make_tasks(pytester.path, 4)
    pytester.runpytest_subprocess(*BASE, "--repeats=2", "--agentbench-dir=full")
    pytester.runpytest_subprocess(*BASE, "--repeats=2", "--agentbench-dir=part", "-k", "t00")
    result = agentbench(pytester.path, "merge", "full", "part", "full", "-o", "merged.json")
    assert result.returncode == 0, result.stderr
    merged = json.loads((pytester.path / "merged.json").read_text())
    trials = {t["id"]: t["trials"] for t in merged["tasks"]}
    assert trials == {"t00": 4, "t01": 2, "t02": 2, "t03": 2}  # "full" given twice counts once
    assert merged["summary"]["k"] == 2 and merged["summary"]["coverage"] == 1.0
    assert merged["summary"]["tasks_selected"] == 4
    t00 = [o for o in merged["observations"] if o["task"] == "t00"]
    rate = sum(o["first_exact"] for o in t00) / 4
    assert next(t for t in merged["tasks"] if t["id"] == "t00")["first_exact"] == rate


def test_a_provider_stop_stays_in_the_record_after_resume_re_runs_it(
    pytester: pytest.Pytester,
) -> None:
    make_tasks(pytester.path, 3)
    pytester.runpytest_subprocess(*BASE, "--repeats=2", "--agentbench-dir=run")
    records = pytester.path / "run" / "observations.jsonl"
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    rows[0].update(status="provider_stop", cause="http 429")  # as a rate limit leaves it
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    stopped = rows[0]["trial_id"]

    resume = ["--repeats=2", "--agentbench-resume=run"]
    pytester.runpytest_subprocess(*BASE, *resume, "--agentbench-dir=again", "--agentbench-json=j")
    again = json.loads((pytester.path / "j").read_text())
    assert again["summary"]["provider_stops"] == 1 and again["summary"]["trials"] == 6
    assert [o["trial_id"] for o in again["observations"] if o["status"] != "scored"] == [stopped]
    kept = (pytester.path / "again" / "observations.jsonl").read_text()
    assert kept.count(stopped) == 1  # the copy carries the stop, with the source's id

    pytester.runpytest_subprocess(*BASE, *resume)
    ran = [json.loads(line) for line in records.read_text().splitlines()]
    assert [o["status"] for o in ran].count("provider_stop") == 1 and len(ran) == 7
    assert ran[-1]["trial_id"].endswith(f"/{rows[0]['task']}/r{rows[0]['repeat']}/a1")

    result = agentbench(pytester.path, "merge", "run", "again", "-o", "merged.json")
    assert result.returncode == 0, result.stderr
    merged = json.loads((pytester.path / "merged.json").read_text())
    assert merged["summary"]["provider_stops"] == 1  # one stop, reached the merge twice
    assert merged["summary"]["trials"] == 7  # 6 of "run" and the re-run of "again"
    assert merged["run"]["quarantine"] == {
        "quarantined": False, "trials": 8, "provider_stops": 1, "share": 1 / 8, "reason": None
    }  # fmt: skip


def test_merged_documents_expose_rank_quarantine_and_coverage(pytester: pytest.Pytester) -> None:
    make_tasks(pytester.path, 2)
    pytester.runpytest_subprocess(*BASE, "--agentbench-dir=a")
    pytester.runpytest_subprocess(*BASE, "--model=m2", "--agentbench-dir=b", "-k", "t00")
    document = build_document(merge([*load_source(pytester.path / "a"),
                                     *load_source(pytester.path / "b")]))  # fmt: skip
    reports = document["configurations"]
    assert [r["summary"]["coverage"] for r in reports] == [1.0, 0.5]
    assert [r["run"]["quarantined"] for r in reports] == [False, False]
    assert all(isinstance(r["run"]["rank"], int) for r in reports)
    assert math.isclose(reports[1]["summary"]["score"], reports[1]["summary"]["quality"] * 0.5)


def test_every_report_format_shows_quarantine_and_conflicts(tmp_path: Path) -> None:
    from inline_payloads import payloads_of

    from pytest_agentbench.commands.report import html_page
    from pytest_agentbench.report.markdown import render_markdown
    from pytest_agentbench.scoring.document import write_report

    observations = [
        trial(f"t{i}", 0, True, status="provider_stop" if i < 11 else "scored",
              cause="http 429", fixture_hash="h1")
        for i in range(50)
    ]  # fmt: skip
    observations += [
        trial("t20", 1, True, fixture_hash="h1"),
        trial("t20", 2, True, "b", fixture_hash="h2"),
    ]
    report = report_of(observations, [f"t{i}" for i in range(50)])
    write_report(report, tmp_path / "report.json")
    index = payloads_of(html_page(tmp_path / "report.json"))["index"]
    html = "\n".join(index["configurations"][0]["notes"])
    assert index["configurations"][0]["evidence"] == [
        {"class": "provider stops", "trials": 11, "causes": {"http 429": 11}}
    ]
    markdown = render_markdown(report)
    for text in (markdown, html):
        assert "quarantined, not ranked: 11 of 52 trials were provider stops" in text
        assert "fixture conflict in t20 (fixture h1: 2 trials PP, fixture h2: 1 trial P)" in text
