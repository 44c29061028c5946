"""builtin:mechanical through the plugin: oracle passes all, nop fails all, selection works."""

from __future__ import annotations

import pytest

from pytest_agentbench.suites import mechanical
from pytest_agentbench.suites.mechanical import spec as spec_module

TOTAL = len(mechanical.specs())


@pytest.mark.parametrize(("agent", "outcome"), [("oracle", "passed"), ("nop", "failed")])
def test_every_task_separates_oracle_from_nop(pytester: pytest.Pytester, agent, outcome):
    result = pytester.runpytest_subprocess(f"--agent={agent}", "--tasks=builtin:mechanical")
    assert result.parseoutcomes() == {outcome: TOTAL}


def test_an_ini_file_names_the_suite_as_builtin(pytester: pytest.Pytester):
    pytester.makeini("[pytest]\nagentbench_tasks = builtin:mechanical\n")
    result = pytester.runpytest_subprocess("--agent=oracle", "--collect-only", "-q")
    result.stdout.fnmatch_lines([f"{TOTAL} tests collected*"])


def test_an_unknown_builtin_in_an_ini_file_is_a_usage_error_naming_the_file(
    pytester: pytest.Pytester,
):
    ini = pytester.makeini("[pytest]\nagentbench_tasks = builtin:xyz\n")
    result = pytester.runpytest_subprocess("--agent=oracle")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == (
        f"ERROR: {ini}: agentbench_tasks = builtin:xyz: unknown built-in suite; known: "
        "builtin:tasks, builtin:integrity, builtin:mechanical"
    )


def test_oracle_under_xdist(pytester: pytest.Pytester):
    result = pytester.runpytest_subprocess(
        "--agent=oracle", "--tasks=builtin:mechanical", "-m", "scale_10 or files_10", "-n", "2"
    )
    selected = [s for s in mechanical.specs() if s.scale in ("s10", "f10")]
    assert result.parseoutcomes()["passed"] == len(selected)


@pytest.mark.parametrize(
    ("selection", "predicate"),
    [
        (["-k", "replace-all"], lambda s: "replace-all" in s.id),
        (["-m", "unicode"], lambda s: s.variant == "unicode"),
        (["-m", "scale_1000 and lang_text"], lambda s: s.scale == "s1000" and s.language == "text"),
    ],
    ids=["k-replace-all", "m-unicode", "m-scale-and-lang"],
)
def test_selection_by_keyword_and_marker(pytester: pytest.Pytester, selection, predicate):
    result = pytester.runpytest_subprocess(
        "--agent=oracle", "--tasks=builtin:mechanical", "--collect-only", "-q", *selection
    )
    expected = sorted(s.id for s in mechanical.specs() if predicate(s))
    collected = sorted(
        line.split("/")[-1].removesuffix("::r0")
        for line in result.outlines
        if line.endswith("::r0")
    )
    assert collected == expected


def test_tasks_build_nothing_until_asked(monkeypatch):
    calls = []
    real_build = spec_module.Spec.build
    monkeypatch.setattr(
        spec_module.Spec, "build", lambda self: calls.append(self.id) or real_build(self)
    )
    tasks = mechanical.tasks()
    assert [t.id for t in tasks] == [s.id for s in mechanical.specs()]
    assert all(t.fixture_hash for t in tasks) and all(t.tags for t in tasks)
    assert calls == []
    task = tasks[0]
    assert task.prompt.isascii() and calls == [task.id]
    assert task.content_hash() == task.fixture_hash


def test_cli_validates_the_suite(capsys):
    from pytest_agentbench.cli import main

    assert main(["validate", "--tasks", "builtin:mechanical"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"# {TOTAL} tasks checked, 0 unsound"


def test_cli_lists_the_suite_with_the_golden_task_set_hash(capsys):
    from pytest_agentbench.cli import main
    from pytest_agentbench.suites.mechanical import golden

    assert main(["list", "--tasks", "builtin:mechanical"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == TOTAL + 1
    assert lines[0].split("\t")[:4] == [
        "block-copy-file-s10-plain",
        "block-copy-file",
        "s10",
        "plain",
    ]
    assert lines[-1] == f"# {TOTAL} tasks, task-set hash {golden.read().task_set}"
