"""--agentbench-measure (ini agentbench_measure): which code measures a run takes of each
trial's change; lines by default, an unknown name or a missing tool a usage error before any
trial, the choice kept in run.json's settings."""

from __future__ import annotations

import json

import pytest

from conftest import one_error_line, write_task


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    write_task(pytester.path / "tasks", "t1", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    return pytester


def run_settings(pytester: pytest.Pytester, *args: str) -> dict[str, object]:
    result = pytester.runpytest_subprocess(
        "--agent=oracle", "--tasks=tasks", "--sandbox=tmp", "--agentbench-json=r.json", *args
    )
    result.assert_outcomes(passed=1)
    settings: dict[str, object] = json.loads((pytester.path / "r.json").read_text())["run"][
        "settings"
    ]
    return settings


def test_lines_is_the_default(project: pytest.Pytester) -> None:
    assert run_settings(project)["measure"] == ["lines"]


def test_the_option_and_the_ini_key_choose_the_measures(project: pytest.Pytester) -> None:
    chosen = run_settings(project, "--agentbench-measure=lines,complexity, dead_code")
    assert chosen["measure"] == ["lines", "complexity", "dead_code"]
    project.makeini("[pytest]\nagentbench_measure = complexity\n")
    assert run_settings(project)["measure"] == ["complexity"]


def test_an_unknown_measure_names_the_option_and_the_valid_names(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest_subprocess(
        "--agent=oracle", "--tasks=tasks", "--agentbench-measure=lines,cyclomatic"
    )
    one_error_line(
        result,
        "ERROR: --agentbench-measure 'lines,cyclomatic': unknown measure cyclomatic; "
        "choose from lines, complexity, dead_code, coverage",
    )


def test_a_measure_whose_tool_is_missing_names_the_extra(project: pytest.Pytester) -> None:
    """A conftest hides lizard as an uninstalled package looks (find_spec answers None)."""
    project.makeconftest(
        "import importlib.util\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name == 'lizard' else real(name, *a)\n"
    )
    result = project.runpytest_subprocess(
        "--agent=oracle", "--tasks=tasks", "--agentbench-measure=complexity"
    )
    one_error_line(
        result,
        "ERROR: --agentbench-measure complexity needs lizard: "
        "pip install 'pytest-agentbench[measure]'",
    )


def test_a_resumed_run_reads_the_measures_as_run_json_keeps_them() -> None:
    from pytest_agentbench.options import parse_measures

    assert parse_measures(["lines", "dead_code"]) == ("lines", "dead_code")
    assert parse_measures(None) == ("lines",)
