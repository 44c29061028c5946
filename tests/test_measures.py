"""The code measures of one change (grading/measures.py), on hand-computed cases: the change
is made as a trial makes it (workspace_diff from the input tree to a workspace) and measured
from that diff alone."""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.grading.measures import is_test_path, measure_change, with_ratios
from pytest_agentbench.tasks.model import MemoryTree
from pytest_agentbench.trial import measuring
from pytest_agentbench.trial.artifacts import workspace_diff

from conftest import write_tree

ALL = ("lines", "complexity", "dead_code")
BEFORE_PY = (
    "def used(x):\n"
    "    return x + 1\n"
    "\n"
    "\n"
    "def untouched(x):\n"
    "    if x:\n"
    "        return 1\n"
    "    return 0\n"
    "\n"
    "\n"
    "print(used(1), untouched(2))\n"
)
AFTER_PY = BEFORE_PY.replace(
    "    return x + 1\n", "    if x > 3:\n        return x\n    return x + 1\n"
).replace("print(", "def helper(y):\n    for _ in range(y):\n        pass\n\n\nprint(")


def change_of(
    before: dict[str, str | bytes], after: dict[str, str | bytes]
) -> tuple[MemoryTree, str]:
    """The input tree and the diff a trial would record for a workspace holding `after`."""
    tree = MemoryTree(
        {rel: text.encode() if isinstance(text, str) else text for rel, text in before.items()}
    )
    with tempfile.TemporaryDirectory() as root:
        write_tree(Path(root), after)
        return tree, workspace_diff(tree, Path(root), limit=1 << 20, file_limit=1 << 20)


def test_lines_split_source_from_tests_and_binary_files_count_as_touched() -> None:
    tree, patch = change_of(
        {
            "app.py": BEFORE_PY,
            "tests/test_app.py": "def test_a():\n    assert True\n",
            "logo.png": b"\0a",
        },
        {
            "app.py": AFTER_PY,  # 2 lines into used(), helper()'s 3 and 2 blank lines after
            "tests/test_app.py": "def test_a():\n    assert 1\n\n\ndef test_b():\n    pass\n",
            "logo.png": b"\0b",
            "README.md": "new\n",
        },
    )
    assert measure_change(tree, patch, ("lines",)) == {
        "files_touched": 4,
        "lines_added": 7 + 1 + 5,
        "lines_removed": 1,
        "source_lines_added": 7 + 1,
        "source_lines_removed": 0,
        "test_lines_added": 5,  # assert 1, two blank lines, test_b's two
        "test_lines_removed": 1,
    }


def test_complexity_counts_the_functions_touched_and_new_ones_from_zero() -> None:
    """used() goes from 1 to 2 (one if), helper() is new with 2 (one for); untouched() (2)
    is not counted. vulture finds helper() unused."""
    tree, patch = change_of({"app.py": BEFORE_PY}, {"app.py": AFTER_PY})
    figures = measure_change(tree, patch, ("complexity", "dead_code"))
    assert figures == {
        "complexity_before": 1,
        "complexity_after": 4,
        "complexity_added": 3,
        "dead_code_before": 0,
        "dead_code_after": 1,
        "dead_code_added": 1,
    }


def test_a_deleted_function_takes_its_complexity_away() -> None:
    tree, patch = change_of({"app.py": BEFORE_PY}, {"app.py": "print(1)\n"})
    figures = measure_change(tree, patch, ("complexity",))
    assert figures["complexity_added"] == -(1 + 2)


def test_measures_that_do_not_apply_are_none_never_zero() -> None:
    tree, patch = change_of({"notes.txt": "a\n"}, {"notes.txt": "b\n"})
    figures = measure_change(tree, patch, ALL)
    assert figures["lines_added"] == 1
    assert figures["complexity_added"] is None and figures["dead_code_added"] is None
    go_tree, go_patch = change_of(
        {"main.go": "package main\n"},
        {
            "main.go": "package main\n\nfunc f(x int) int {\n\tif x > 0 {\n\t\treturn 1\n"
            "\t}\n\treturn 0\n}\n"
        },
    )
    go = measure_change(go_tree, go_patch, ALL)
    assert go["complexity_added"] == 2 and go["dead_code_added"] is None


def test_a_cut_change_measures_nothing() -> None:
    tree = MemoryTree({"a.txt": b"1\n"})
    assert set(measure_change(tree, "+++ b/a.txt\n... (diff cut)\n", ALL).values()) == {None}


def test_test_paths_override_the_default_patterns() -> None:
    assert is_test_path("pkg/tests/x.py") and is_test_path("src/a.test.ts")
    assert is_test_path("b_test.go") and not is_test_path("src/contest.py")
    assert is_test_path("checks/x.py", ["checks/**"])
    assert not is_test_path("tests/x.py", ["checks/**"])
    assert is_test_path("deep/dir/x_check.py", ["**/*_check.py"])
    assert not is_test_path("deep/dir/x_check.py", ["*_check.py"])


def test_ratios_to_the_reference_are_none_when_it_is_zero_or_unknown() -> None:
    ratios = with_ratios(
        {"lines_added": 6, "lines_removed": 0, "complexity_added": None},
        {"lines_added": 3, "lines_removed": 0, "complexity_added": 2},
    )
    assert ratios["lines_added_ratio"] == 2.0
    assert ratios["lines_removed_ratio"] is None and ratios["complexity_added_ratio"] is None
    assert with_ratios({"lines_added": 1}, None)["lines_added_ratio"] is None


LINES = st.lists(st.sampled_from(["a", "b", "", "  c", "d\r", "e\tf"]), max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["x.txt", "tests/y.py", "z.md"]), LINES, max_size=3),
    st.dictionaries(st.sampled_from(["x.txt", "tests/y.py", "z.md"]), LINES, max_size=3),
)
def test_added_less_removed_is_the_change_in_line_count(
    before: dict[str, list[str]], after: dict[str, list[str]]
) -> None:
    def text(lines: list[str]) -> str:
        return "".join(f"{line}\n" for line in lines)

    tree, patch = change_of(
        {rel: text(lines) for rel, lines in before.items()},
        {rel: text(lines) for rel, lines in after.items()},
    )
    figures = measure_change(tree, patch, ("lines",))
    count = sum(len(lines) for lines in after.values()) - sum(
        len(lines) for lines in before.values()
    )
    assert figures["lines_added"] - figures["lines_removed"] == count  # type: ignore[operator]


def test_a_reference_is_measured_once_however_many_trials_ask_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Trials in flight at once (--agentbench-concurrency) ask for their task's reference
    together: the first measures it, the others wait for its figures."""
    calls = []

    def measure(task: Any, asked: tuple[str, ...], limit: int) -> dict[str, int | None]:
        calls.append(task.source)
        time.sleep(0.05)  # long enough that every other thread asks meanwhile
        return {"lines_added": len(task.source)}

    monkeypatch.setattr(measuring, "_measure_reference", measure)
    monkeypatch.setattr(measuring, "_REFERENCES", {})
    monkeypatch.setattr(measuring, "_REFERENCE_LOCKS", {})
    tasks = [SimpleNamespace(source="t" * (1 + i % 2), fixture_hash="h") for i in range(16)]
    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(lambda task: measuring.reference_measures(task, ALL, 100), tasks))
    assert sorted(calls) == ["t", "tt"]
    assert got == [{"lines_added": len(task.source)} for task in tasks]
