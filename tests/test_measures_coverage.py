"""Changed-line coverage (grading/coverage.py) on hand-computed cases: the task's own test
command runs under coverage.py on the workspace rebuilt from the change, and the figure is the
share of the added Python source lines that are statements and ran."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from test_measures import change_of

from pytest_agentbench.grading.coverage import TaskTests, coverage_figures
from pytest_agentbench.grading.measures import file_sides, parse_change

from conftest import write_task

CALC = "def add(a, b):\n    return a + b\n"
# Six added lines: two blank, then four statements (the def runs on import).
SUB = CALC + "\n\ndef sub(a, b):\n    if a > b:\n        return a - b\n    return b - a\n"
TEST_ADD = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
TEST_SUB = TEST_ADD + "\n\ndef test_sub():\n    from calc import sub\n\n    assert sub(3, 1) == 2\n"
PYTEST = f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider tests"


def covered(
    before: dict[str, str], after: dict[str, str], command: str = PYTEST, timeout: float = 60
) -> tuple[dict[str, int | float | None], str | None]:
    tree, patch = change_of(dict(before), dict(after))
    changes = parse_change(patch)
    sides = file_sides(tree, changes)
    return coverage_figures(tree, changes, sides, TaskTests(command, timeout, {}), None)


def test_the_share_of_added_statements_the_tests_run() -> None:
    before = {"calc.py": CALC, "tests/test_calc.py": TEST_ADD}
    figures, why = covered(before, {"calc.py": SUB, "tests/test_calc.py": TEST_ADD})
    assert why is None
    assert figures == {"coverage_lines": 4, "coverage_lines_run": 1, "changed_line_coverage": 0.25}
    # The change's own tests count: they are the workspace's tests after the change.
    figures, why = covered(before, {"calc.py": SUB, "tests/test_calc.py": TEST_SUB})
    assert figures == {"coverage_lines": 4, "coverage_lines_run": 3, "changed_line_coverage": 0.75}


def test_python_the_command_starts_in_a_subprocess_is_measured() -> None:
    """The command need not be Python itself: a shell line that starts it is measured too."""
    before = {"calc.py": CALC, "tests/test_calc.py": TEST_ADD}
    command = f"true && sh -c {shlex.quote(PYTEST)}"
    figures, _ = covered(before, {"calc.py": SUB, "tests/test_calc.py": TEST_SUB}, command)
    assert figures["changed_line_coverage"] == 0.75


@pytest.mark.parametrize(
    ("after", "command", "timeout", "reason"),
    [
        pytest.param(
            {"calc.py": CALC, "notes.md": "more\n"}, PYTEST, 60,
            "the change adds no line to a Python source file", id="no-python-source",
        ),
        pytest.param(
            {"calc.py": SUB}, "echo no tests here", 60,
            "the test command ran no Python that has coverage.py", id="no-python-ran",
        ),
        pytest.param(
            {"calc.py": SUB}, "sleep 30", 0.5, "the test command timed out after 0.5 s",
            id="timed-out",
        ),
        pytest.param(
            {"calc.py": CALC + "\n\n# only a comment\n"}, PYTEST, 60,
            "no added source line is a statement", id="no-statement",
        ),
    ],
)  # fmt: skip
def test_a_figure_that_cannot_be_known_is_none_with_the_reason(
    after: dict[str, str], command: str, timeout: float, reason: str
) -> None:
    figures, why = covered({"calc.py": CALC}, after, command, timeout)
    assert why == reason
    assert figures["changed_line_coverage"] is None and figures["coverage_lines_run"] is None


def test_model_credentials_are_not_in_the_tests_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    seen = tmp_path / "seen"
    command = f"env > {seen}; {PYTEST}"
    covered({"calc.py": CALC}, {"calc.py": SUB, "tests/test_calc.py": TEST_ADD}, command)
    assert "PATH=" in seen.read_text() and "sk-secret" not in seen.read_text()


def tasks(root: Path) -> None:
    write_task(
        root,
        "calc",
        {"calc.py": CALC, "tests/test_calc.py": TEST_ADD},
        verify="#!/bin/sh\ngrep -q 'def sub' calc.py\n",
        solution={"calc.py": SUB},
        toml_extra=f"test_command = {json.dumps(PYTEST)}\n",
    )
    write_task(root, "plain", {"a.txt": "1\n"}, {"a.txt": "2\n"})


def measured(run: Path) -> dict[str, dict[str, object]]:
    rows = [json.loads(line) for line in (run / "observations.jsonl").read_text().splitlines()]
    return {row["task"]: row for row in rows}


def test_a_run_measures_coverage_and_measure_gives_the_same(pytester: pytest.Pytester) -> None:
    tasks(pytester.path / "tasks")
    result = pytester.runpytest_subprocess(
        "--agent=oracle", "--tasks=tasks", "--sandbox=tmp", "--agentbench-dir=run",
        "--agentbench-measure=lines,coverage",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    run = pytester.path / "run"
    found = measured(run)
    calc = found["calc"]
    assert calc["measures"]["changed_line_coverage"] == 0.25  # type: ignore[index]
    assert calc["measure_notes"] is None
    assert found["plain"]["measures"]["changed_line_coverage"] is None  # type: ignore[index]
    assert found["plain"]["measure_notes"] == {"coverage": "the task has no test_command"}
    again = pytester.run("agentbench", "measure", "run", "--measure=coverage")
    assert again.ret == 0, again.stderr.str()
    assert measured(run)["calc"]["measures"]["changed_line_coverage"] == 0.25  # type: ignore[index]
