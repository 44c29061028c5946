"""Code measures in a run: each trial's Observation carries the measures asked, with ratios
to the task's reference change, and its folder keeps the whole change (change.patch); the
same under xdist."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_measures import AFTER_PY, BEFORE_PY

from pytest_agentbench.grading.measures import FIGURES

from conftest import write_task

DISTS = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist")]
VERIFY_TWO_LINES = '#!/bin/sh\ntest "$(wc -l < notes.txt)" -ge 2\n'


def tasks(root: Path) -> None:
    """An exact task whose reference is its expected tree, and a verified task whose
    reference is solution/ (two lines appended to notes.txt)."""
    write_task(root, "code", {"app.py": BEFORE_PY}, {"app.py": AFTER_PY})
    write_task(
        root,
        "notes",
        {"notes.txt": "a\n"},
        verify=VERIFY_TWO_LINES,
        solution={"notes.txt": "a\nb\nc\n"},
    )


def observations(run: Path) -> dict[str, Any]:
    rows = [json.loads(line) for line in (run / "observations.jsonl").read_text().splitlines()]
    return {row["task"]: row for row in rows}


@pytest.mark.parametrize("dist", DISTS)
def test_the_oracle_measures_as_its_reference(pytester: pytest.Pytester, dist: list[str]) -> None:
    tasks(pytester.path / "tasks")
    result = pytester.runpytest_subprocess(
        "--agent=oracle", "--tasks=tasks", "--sandbox=tmp", "--agentbench-dir=run",
        "--agentbench-measure=lines,complexity,dead_code", *dist,
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    found = observations(pytester.path / "run")
    code = found["code"]["measures"]
    assert (code["lines_added"], code["complexity_added"], code["dead_code_added"]) == (7, 3, 1)
    assert code["lines_added_ratio"] == 1.0 and code["complexity_added_ratio"] == 1.0
    assert code["lines_removed_ratio"] is None  # the reference removed nothing
    notes = found["notes"]["measures"]
    assert (notes["lines_added"], notes["lines_added_ratio"]) == (2, 1.0)
    assert notes["complexity_added"] is None and notes["dead_code_added"] is None  # no code
    change = pytester.path / "run" / "trials" / "code-r0" / "change.patch"
    added = [line for line in change.read_text().splitlines() if line[:1] == "+"]
    assert len(added) == 1 + 7  # the +++ header, then the added lines


def test_a_shorter_change_than_the_reference_has_a_ratio_below_one(
    pytester: pytest.Pytester,
) -> None:
    tasks(pytester.path / "tasks")
    result = pytester.runpytest_subprocess(
        "--agent=command", "--agent-cmd=echo b >> notes.txt", "--tasks=tasks", "--sandbox=tmp",
        "--agentbench-dir=run", "-k", "notes",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    measures = observations(pytester.path / "run")["notes"]["measures"]
    lines = FIGURES["lines"]  # only the default measure was asked
    assert set(measures) == {*lines, *(f"{name}_ratio" for name in lines)}
    assert (measures["lines_added"], measures["lines_added_ratio"]) == (1, 0.5)
    reference = observations(pytester.path / "run")["notes"]["measure_reference"]
    assert reference["lines_added"] == 2  # the ratio's denominator, for a gate's floor


def test_reports_give_each_configuration_s_medians(pytester: pytest.Pytester) -> None:
    tasks(pytester.path / "tasks")
    result = pytester.runpytest_subprocess(
        "--agent=oracle", "--tasks=tasks", "--sandbox=tmp", "--agentbench-dir=run",
        "--agentbench-measure=lines,complexity", "--agentbench-json=r.json",
    )  # fmt: skip
    block = json.loads((pytester.path / "r.json").read_text())["measures"]
    assert block["trials"] == 2
    assert block["figures"]["lines_added"] == {"median": 4.5, "trials": 2}  # 7 and 2
    assert block["figures"]["complexity_added"] == {"median": 3, "trials": 1}  # code only
    result.stdout.fnmatch_lines(
        ["measures, median of 2 scored trials: files 1 · lines added 4.50 · removed 0 *"]
    )
    report = pytester.run("agentbench", "report", "run", "--format=md")
    report.stdout.fnmatch_lines(["## Code measures*", "*| complexity_added *| 3 *| 1 *|*"])


def test_measure_adds_measures_to_a_finished_run(pytester: pytest.Pytester) -> None:
    """The run took lines only; `agentbench measure` adds complexity from the kept changes,
    the figures those a run asking for them would have had, and rewrites the latest records."""
    tasks(pytester.path / "tasks")
    pytester.runpytest_subprocess(
        "--agent=oracle", "--tasks=tasks", "--sandbox=tmp", "--agentbench-dir=run"
    ).assert_outcomes(passed=2)
    run = pytester.path / "run"
    assert "complexity_added" not in observations(run)["code"]["measures"]
    result = pytester.run("agentbench", "measure", "run", "--measure=lines,complexity")
    assert result.ret == 0
    result.stderr.fnmatch_lines(["measured 2 trials in run (lines, complexity)"])
    result.stdout.fnmatch_lines(["measures, median of 2 scored trials: *complexity added 3*"])
    code = observations(run)["code"]["measures"]
    assert (code["lines_added"], code["complexity_added"], code["complexity_added_ratio"]) == (
        7,
        3,
        1.0,
    )
    assert not list(run.glob("*.tmp"))  # replaced atomically


def test_measure_leaves_trials_it_cannot_measure_as_recorded(pytester: pytest.Pytester) -> None:
    tasks(pytester.path / "tasks")
    pytester.runpytest_subprocess(
        "--agent=oracle", "--tasks=tasks", "--sandbox=tmp", "--agentbench-dir=run"
    ).assert_outcomes(passed=2)
    run = pytester.path / "run"
    (run / "trials" / "code-r0" / "change.patch").unlink()
    rows = [json.loads(line) for line in (run / "observations.jsonl").read_text().splitlines()]
    for row in rows:
        row.pop("measures")  # as a run from before measures recorded it
    (run / "observations.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = pytester.run("agentbench", "measure", "run")
    result.stderr.fnmatch_lines(
        ["measured 1 trial in run (lines); 1 trial stays as recorded: it kept no change.patch"]
    )
    found = observations(run)
    assert "measures" not in found["code"] and found["notes"]["measures"]["lines_added"] == 2


def test_measure_names_a_directory_that_is_no_run(pytester: pytest.Pytester) -> None:
    result = pytester.run("agentbench", "measure", "nowhere", "--measure=lines")
    assert result.ret == 2
    result.stderr.fnmatch_lines(["agentbench measure: nowhere: not a run directory*"])


def test_a_change_past_its_limit_is_cut_and_measures_nothing(pytester: pytest.Pytester) -> None:
    tasks(pytester.path / "tasks")
    pytester.runpytest_subprocess(
        "--agent=oracle", "--tasks=tasks", "--sandbox=tmp", "--agentbench-dir=run",
        "--agentbench-change-limit=100", "-k", "code",
    ).assert_outcomes(passed=1)  # fmt: skip
    run = pytester.path / "run"
    assert set(observations(run)["code"]["measures"].values()) == {None}
    change = (run / "trials" / "code-r0" / "change.patch").read_text()
    assert change.endswith("... (diff cut)\n") and len(change) <= 100 + len("... (diff cut)\n")
    assert (run / "trials" / "code-r0" / "diff.patch").read_text().count("\n+") > 1  # whole


def test_the_bundled_integrity_suite_measures_its_reference_change(
    pytester: pytest.Pytester,
) -> None:
    """consistent-tests: the oracle's change replaces `raise NotImplementedError` in slug.py
    by one return line: one file, one line each way, all source; slugify's complexity stays 1;
    vulture finds one unused name fewer."""
    result = pytester.runpytest_subprocess(
        "--agent=oracle", "--tasks=builtin:integrity", "-k", "consistent-tests",
        "--sandbox=tmp", "--agentbench-dir=run", "--agentbench-measure=lines,complexity,dead_code",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    measures = observations(pytester.path / "run")["consistent-tests"]["measures"]
    assert {name: measures[name] for name in FIGURES["lines"]} == {
        "files_touched": 1, "lines_added": 1, "lines_removed": 1, "source_lines_added": 1,
        "source_lines_removed": 1, "test_lines_added": 0, "test_lines_removed": 0,
    }  # fmt: skip
    assert (measures["complexity_before"], measures["complexity_after"]) == (1, 1)
    # Unused before: slugify and its argument (the stub never reads it); after: slugify.
    assert (measures["dead_code_before"], measures["dead_code_after"]) == (2, 1)
    assert measures["lines_added_ratio"] == 1.0  # the oracle is its own reference
