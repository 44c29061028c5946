"""Paired differences of the code measures: hand-computed means over tasks, their bootstrap
interval, the tasks a figure pairs and leaves out; through compare, the arms block, the
reports' words and the measure gates."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from test_compare import configuration

from pytest_agentbench.commands.compare import render
from pytest_agentbench.grading.measures import figure_names
from pytest_agentbench.report.arms import measure_lines
from pytest_agentbench.report.measures import paired_measure_line, paired_measure_rows
from pytest_agentbench.scoring.arm_compare import arms_block
from pytest_agentbench.scoring.compare import (
    FAIL,
    PASS,
    UNDETERMINED,
    Gate,
    compare,
    evaluate_gate,
)
from pytest_agentbench.scoring.configurations import Configuration
from pytest_agentbench.scoring.gates import load_gates
from pytest_agentbench.scoring.measures import paired_measures
from pytest_agentbench.scoring.stats import mean_interval
from pytest_agentbench.tasks.observation import Observation


def trial(status: str = "scored", **measures: float | None) -> Observation:
    return {"status": status, "measures": dict(measures)}  # type: ignore[typeddict-item]


def test_the_mean_of_per_task_median_differences_over_the_tasks_both_sides_know() -> None:
    pairs = [
        # a: base median 3 (2, 4), candidate 10: +7; complexity only here: 1 - 2 = -1
        (
            "a",
            [trial(lines_added=2, complexity_added=2), trial(lines_added=4)],
            [trial(lines_added=10, complexity_added=1)],
        ),
        # b: base 5, candidate median 3 (1, 3, 8): -2; an unscored trial is not counted
        (
            "b",
            [trial(lines_added=5), trial("error", lines_added=100)],
            [trial(lines_added=1), trial(lines_added=3), trial(lines_added=8)],
        ),
        # c: the base knows no lines (a cut change): left out of lines_added
        ("c", [trial(lines_added=None)], [trial(lines_added=4)]),
    ]
    block = paired_measures(pairs)
    assert block is not None and block["tasks"] == 3
    lines = block["figures"]["lines_added"]
    assert (lines["point"], lines["tasks"], lines["left_out"]) == (2.5, 2, ["c"])
    assert lines["interval"] is None and lines["note"] == "too few tasks (2 < 6)"
    complexity = block["figures"]["complexity_added"]
    assert (complexity["point"], complexity["tasks"], complexity["left_out"]) == (-1, 1, ["b", "c"])


def test_from_six_tasks_on_the_interval_is_the_bootstrap_of_the_differences() -> None:
    differences = [3, -1, 4, 1, -5, 9, 2]
    pairs = [
        (f"t{i}", [trial(files_touched=10)], [trial(files_touched=10 + d)])
        for i, d in enumerate(differences)
    ]
    figure = paired_measures(pairs, seed=7)["figures"]["files_touched"]  # type: ignore[index]
    mean = sum(differences) / len(differences)
    assert figure["point"] == pytest.approx(mean) and figure["tasks"] == 7
    assert figure["interval"] == mean_interval(differences, 7)
    low, high = figure["interval"]
    assert low <= mean <= high and low < high
    assert figure["note"] is None and figure["left_out"] == []


def test_no_measured_trial_gives_no_block_and_a_figure_none_knows_pairs_no_task() -> None:
    assert paired_measures([("a", [trial("scored")], [trial("scored")])]) is None
    assert paired_measures([("a", [{"status": "scored"}], [{"status": "scored"}])]) is None  # type: ignore[list-item]
    block = paired_measures([("a", [trial(dead_code_added=None)], [trial(dead_code_added=None)])])
    assert block is not None
    figure = block["figures"]["dead_code_added"]
    assert (figure["point"], figure["interval"], figure["tasks"]) == (None, None, 0)
    assert paired_measure_rows([("x", block)]) == [
        ["x", "dead_code_added", "unknown", "no task pairs", "0"]
    ]


def measured(
    outcomes: dict[str, str], lines: dict[str, list[int | None]], **options: Any
) -> Configuration:
    """test_compare's configuration, each task's trials given lines_added in repeat order."""
    config = configuration(outcomes, **options)
    for obs in config.observations:
        values = lines.get(obs["task"])
        if values is not None:
            obs["measures"] = {"lines_added": values[obs["repeat"]], "files_touched": 1}
    return config


SIX = {f"t{i}": "PP" for i in range(6)}
BASE_LINES = {f"t{i}": [10, 20] for i in range(6)}  # median 15 each


def test_compare_pairs_the_measures_of_the_tasks_it_pairs() -> None:
    base = measured({**SIX, "gone": "PP"}, {**BASE_LINES, "gone": [1, 1]})
    cand_lines = {f"t{i}": [15 + i, 15 + i] for i in range(6)}  # +0 .. +5: mean 2.5
    candidate = measured({**SIX, "gone": "SS"}, {**cand_lines, "gone": [1, 1]})
    result = compare(base, candidate)
    assert [e["task"] for e in result.excluded] == ["gone"]  # no scored trial in candidate
    figure = result.measures["figures"]["lines_added"]  # type: ignore[index]
    assert (figure["point"], figure["tasks"]) == (2.5, 6) and result.measures["tasks"] == 6  # type: ignore[index]
    low, high = figure["interval"]
    assert low <= 2.5 <= high
    assert result.to_json()["measures"] == result.measures
    text = "\n".join(render(result))
    assert "code measures, candidate - base: mean per-task difference" in text
    assert "(6 tasks paired)" in text
    assert any(
        line.split()[:2] == ["lines_added", "+2.50"] and line.split()[-1] == "6"
        for line in text.splitlines()
    ), text


def test_the_arms_block_gives_each_arm_its_medians_and_each_treatment_its_differences() -> None:
    vanilla = measured(SIX, BASE_LINES)
    core = measured(SIX, {f"t{i}": [5, 5] for i in range(6)}, agent_opts={"arm": "core"})
    vanilla.name, core.name = "vanilla", "core"
    block = arms_block([vanilla, core], {})
    rows = {row["arm"]: row for row in block["arms"]}
    assert rows["vanilla"]["measures"]["figures"]["lines_added"] == {"median": 15, "trials": 12}
    assert rows["core"]["measures"]["figures"]["lines_added"] == {"median": 5, "trials": 12}
    paired = block["paired"][0]["measures"]["figures"]["lines_added"]
    assert (paired["point"], paired["tasks"], paired["interval"]) == (-10, 6, [-10, -10])
    medians, differences = measure_lines(block)
    assert medians[1].startswith("core measures, median of 12 scored trials: files 1")
    assert differences == [
        "core - vanilla measures, mean difference over 6 tasks: files +0 · lines added -10"
    ]


def test_a_figure_paired_on_fewer_tasks_says_how_many() -> None:
    block = paired_measures(
        [
            ("a", [trial(files_touched=1, lines_added=1)], [trial(files_touched=2, lines_added=2)]),
            ("b", [trial(files_touched=1)], [trial(files_touched=1)]),
        ]
    )
    assert paired_measure_line(block, "x - y") == (  # type: ignore[arg-type]
        "x - y measures, mean difference over 2 tasks: files +0.50 · lines added +1 (1 task)"
    )


# ---- gates ------------------------------------------------------------------------------


def gate(key: str, limit: float, bound: str = "point", name: str = "lines_added") -> Gate:
    return Gate("size", f"measures.{name}", bound, limit, key=key)


def test_a_measure_gate_judges_the_mean_increase_by_its_limit() -> None:
    base = measured(SIX, BASE_LINES)
    result = compare(base, measured(SIX, {f"t{i}": [15 + i, 15 + i] for i in range(6)}))
    low, high = result.measures["figures"]["lines_added"]["interval"]  # type: ignore[index]
    assert evaluate_gate(gate("max_increase", 2.5), result)[0] == PASS  # 2.5 <= 2.5
    verdict, text = evaluate_gate(gate("max_increase", 2), result)
    assert (
        verdict == FAIL
        and text == "size: FAIL: lines_added point +2.5 > max_increase +2 over 6 tasks"
    )
    assert evaluate_gate(gate("max_increase", high, "upper"), result)[0] == PASS
    assert evaluate_gate(gate("max_increase", high - 0.01, "upper"), result)[0] == FAIL
    assert evaluate_gate(gate("min_increase", low, "lower"), result)[0] == PASS
    assert evaluate_gate(gate("min_increase", 3), result)[0] == FAIL


def test_a_measure_gate_is_undetermined_without_the_figure_or_with_a_task_left_out() -> None:
    base = measured(SIX, BASE_LINES)
    same = compare(base, measured(SIX, BASE_LINES))
    verdict, text = evaluate_gate(gate("max_increase", 0, name="complexity_added"), same)
    assert verdict == UNDETERMINED and "no trial on either side has complexity_added" in text
    unmeasured = compare(configuration(SIX), configuration(SIX))
    assert evaluate_gate(gate("max_increase", 100), unmeasured)[0] == UNDETERMINED
    # A change too big to measure on one task must not slip past a size gate.
    cut = measured(SIX, {**BASE_LINES, "t3": [None, None]})
    verdict, text = evaluate_gate(gate("max_increase", 100), compare(base, cut))
    assert verdict == UNDETERMINED
    assert "1 task without lines_added on a side or excluded (t3); the 5 pairs give" in text
    few = compare(measured(SIX, BASE_LINES), measured(dict(list(SIX.items())[:3]), BASE_LINES))
    verdict, text = evaluate_gate(gate("max_increase", 100, "upper"), few)
    assert verdict == UNDETERMINED and "too few tasks (3 < 6)" in text


def test_measure_gates_load_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "gates.toml"
    path.write_text(
        '[[gate]]\nmetric = "measures.source_lines_added"\nbound = "upper"\nmax_increase = 20\n'
        '[[gate]]\nname = "keeps tests"\nmetric = "measures.test_lines_added_ratio"\n'
        "min_increase = -0.5\n"
    )
    assert load_gates(path) == [
        Gate("measures.source_lines_added", "measures.source_lines_added", "upper", 20.0,
             key="max_increase"),
        Gate("keeps tests", "measures.test_lines_added_ratio", "point", -0.5, key="min_increase"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (
            'metric = "measures.source_line_added"\nmax_increase = 1\n',
            "gate 1 (unnamed): field 'metric': no code measure figure 'source_line_added' "
            "(did you mean measures.source_lines_added?); measures.NAME takes one of "
            + ", ".join(figure_names()),
        ),
        (
            'metric = "measures.lines_added"\nmargin = 1\n',
            "gate 1 (unnamed): metric measures.lines_added takes one of 'max_increase'",
        ),
        ('metric = "measures.lines_added"\n', "takes one of 'max_increase'"),
        (
            'metric = "measures.lines_added"\nmax_increase = 1\nmin_increase = 0\n',
            "takes one of 'max_increase'",
        ),
        ('metric = "tokens"\nmax_increase = 1\n', "field 'max_increase' belongs to measure gates"),
        (
            'metric = "measures.lines_added"\nmax_increase = "1"\n',
            "field 'max_increase' must be a number",
        ),
    ],
)
def test_bad_measure_gates_name_the_file_the_gate_and_the_field(
    tmp_path: Path, body: str, words: str
) -> None:
    path = tmp_path / "gates.toml"
    path.write_text("[[gate]]\n" + body)
    with pytest.raises(ValueError) as error:
        load_gates(path)
    assert re.match(rf"{re.escape(str(path))}:[23]: ", str(error.value))  # the field's line
    assert words in str(error.value)


# ---- a run with arms, end to end ----------------------------------------------------------


def by_hand(observations: list[Observation], arm: str, base: str = "vanilla") -> float:
    """The mean over tasks of arm's median lines_added minus base's, from the raw trials."""
    from statistics import median

    def medians(name: str) -> dict[str, float]:
        found: dict[str, list[int]] = {}
        for o in observations:
            if o.get("arm") == name and o["status"] == "scored":
                found.setdefault(o["task"], []).append(o["measures"]["lines_added"])
        return {task: median(values) for task, values in found.items()}

    old, new = medians(base), medians(arm)
    differences = [new[task] - old[task] for task in old if task in new]
    return sum(differences) / len(differences)


def test_a_run_with_arms_reports_each_treatment_s_paired_measures(
    pytester: pytest.Pytester,
) -> None:
    import json

    from test_arms_run import MOCK, agentbench, suite

    args = suite(pytester)
    opts = ["--agent-opt", "pass_prob=0.2", "--agent-opt", "pass_prob.arm.core=1"]
    result = pytester.runpytest_subprocess(
        *MOCK, *args, *opts, "--repeats=2", "--agentbench-dir=run", "--agentbench-json=r.json",
        "-v",
    )  # fmt: skip
    report = json.loads((pytester.path / "r.json").read_text())
    arms = report["arms"]
    core = next(p for p in arms["paired"] if p["arm"] == "core")
    figure = core["measures"]["figures"]["lines_added"]
    assert figure["tasks"] == core["measures"]["tasks"] == 4 and figure["left_out"] == []
    assert figure["point"] == pytest.approx(by_hand(report["observations"], "core"))
    assert {row["arm"]: row["measures"]["trials"] for row in arms["arms"]} == {
        "vanilla": 8, "core": 8, "seed-wrong": 4, "seed-correct": 4,
    }  # fmt: skip
    shown = f"{figure['point']:+.2f}".replace(".00", "")
    result.stdout.fnmatch_lines(
        [
            "core measures, median of 8 scored trials: files *",
            f"core - vanilla measures, mean difference over 4 tasks: files * lines added {shown}*",
        ]
    )
    markdown = agentbench(pytester.path, "report", "run", "--format", "md").stdout
    rows = [line.split("|")[1:6] for line in markdown.split("## Arms")[1].splitlines()]
    assert ["core - vanilla", "lines_added", shown, "too few tasks", "4"] in [
        [cell.strip() for cell in row] for row in rows
    ]
    gates = pytester.path / "gates.toml"
    limit = figure["point"]
    gates.write_text(f'[[gate]]\nmetric = "measures.lines_added"\nmax_increase = {limit}\n')
    compared = agentbench(
        pytester.path, "compare", "run", "--arms", "vanilla,core", "--gates", str(gates)
    )
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "code measures, candidate - base" in compared.stdout
    gates.write_text(f'[[gate]]\nmetric = "measures.lines_added"\nmax_increase = {limit - 1}\n')
    compared = agentbench(
        pytester.path, "compare", "run", "--arms", "vanilla,core", "--gates", str(gates)
    )
    assert compared.returncode == 1, compared.stdout + compared.stderr
    assert "gate measures.lines_added: FAIL: lines_added point" in compared.stdout
    gates.write_text('[[gate]]\nmetric = "measures.line_added"\nmax_increase = 0\n')
    bad = agentbench(
        pytester.path, "compare", "run", "--arms", "vanilla,core", "--gates", str(gates)
    )
    assert bad.returncode == 2 and "gate 1 (unnamed): field 'metric'" in bad.stderr
