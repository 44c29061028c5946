"""agentbench compare cut by task class, with no-solution tasks kept out of every accuracy
pair: the class rows against a recount of the task rows, on hand-made configurations."""

from __future__ import annotations

import math

import pytest
from test_compare import configuration

from pytest_agentbench.commands.compare import render
from pytest_agentbench.scoring.compare import compare
from pytest_agentbench.scoring.configurations import Configuration
from pytest_agentbench.scoring.merged import build_document
from pytest_agentbench.settings import Settings


def with_classes(config: Configuration, classes: dict[str, str], unsolvable: set[str]) -> None:
    for task_id, meta in config.declared.items():
        meta.update(category=classes[task_id], no_solution=task_id in unsolvable)


OUTCOMES_BASE = {"a": "PPF", "b": "FFF", "c": "PRF", "guard": "PPP"}
OUTCOMES_CAND = {"a": "PPP", "b": "PFF", "c": "FFF", "guard": "FFF"}
CLASSES = {"a": "bugfix", "b": "bugfix", "c": "refactor", "guard": "integrity"}


def pair() -> tuple[Configuration, Configuration]:
    base = configuration(OUTCOMES_BASE, tokens={"a": 100, "b": 100, "c": 100, "guard": 100})
    cand = configuration(OUTCOMES_CAND, tokens={"a": 200, "b": 50, "c": 100, "guard": 400})
    for config in (base, cand):
        with_classes(config, CLASSES, {"guard"})
    return base, cand


def test_class_rows_are_hand_computed_and_no_solution_tasks_pair_nothing() -> None:
    result = compare(*pair())
    assert result.no_solution == ["guard"]
    assert [t["id"] for t in result.tasks] == ["a", "b", "c"]
    assert result.passes["final_exact"]["slots"] == 9
    rows = {row["category"]: row for row in result.classes}
    assert set(rows) == {"bugfix", "refactor"}
    bugfix = rows["bugfix"]
    # a: first 2/3 -> 3/3 (+1/3), b: 0 -> 1/3 (+1/3); final the same; tokens 2x and 0.5x.
    assert (bugfix["tasks"], bugfix["base_trials"], bugfix["candidate_trials"]) == (2, 6, 6)
    assert bugfix["first_exact"] == pytest.approx(1 / 3)
    assert bugfix["final_exact"] == pytest.approx(1 / 3)
    assert bugfix["tokens_ratio"] == pytest.approx(1.0)
    refactor = rows["refactor"]
    # c: first 1/3 -> 0, final 2/3 -> 0.
    assert refactor["first_exact"] == pytest.approx(-1 / 3)
    assert refactor["final_exact"] == pytest.approx(-2 / 3)
    assert refactor["tokens_ratio"] == pytest.approx(1.0)


def test_class_rows_recount_the_task_rows() -> None:
    result = compare(*pair())
    for row in result.classes:
        members = [t for t in result.tasks if t["category"] == row["category"]]
        for metric in ("first_exact", "final_exact", "quality"):
            expected = sum(t[metric] for t in members) / len(members)
            assert math.isclose(row[metric], expected)
        assert row["base_trials"] == sum(t["base_trials"] for t in members)


def test_the_compare_text_prints_the_class_breakdown() -> None:
    lines = render(compare(*pair()))
    assert "not compared on accuracy: 1 no-solution task (scored on integrity)" in lines
    cells = {
        line.split()[0]: line.split()[1:]
        for line in lines
        if line.startswith(("bugfix", "refactor"))
    }
    assert cells == {
        "bugfix": ["2", "6/6", "+33.3", "pts", "+33.3", "pts", "1.000x"],
        "refactor": ["1", "3/3", "-33.3", "pts", "-66.7", "pts", "1.000x"],
    }


def test_the_combined_figures_of_several_configurations_leave_no_solution_tasks_out() -> None:
    base, cand = pair()
    cand.settings = Settings(agent="mock", repeats=3, model="other")
    cand.identity = {**cand.identity, "model": "other"}
    document = build_document([base, cand])
    combined = document["combined"]
    assert [t["id"] for t in combined["tasks"]] == ["a", "b", "c"]
    assert combined["tasks_declared"] == 3
    firsts = [(2 / 3 + 1) / 2, (0 + 1 / 3) / 2, (1 / 3 + 0) / 2]
    assert combined["first_exact"] == pytest.approx(sum(firsts) / 3)
    for report in document["configurations"]:
        assert report["integrity"]["tasks_declared"] == 1
