"""A failed trial's node id, pasted back into pytest, reruns that trial and nothing else."""

from __future__ import annotations

import re
import shutil

import pytest

from pytest_agentbench.suites import mechanical
from pytest_agentbench.tasks.sources import SUITE_MARKER, suite_dirs

from conftest import simple_tasks

DISTS = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
# The mock is seeded per (run seed, task, repeat): a rerun of a trial repeats its outcome.
MOCK = ["-p", "no:cacheprovider", "--agent=mock", "--sandbox=tmp", "-rf"]


def in_rootdir_tasks(pytester: pytest.Pytester) -> list[str]:
    simple_tasks(pytester.path / "tasks", 6)
    return ["--tasks=tasks"]


def in_rootdir_suite(pytester: pytest.Pytester) -> list[str]:
    """The bundled generated suite, declared by a suite directory below the rootdir."""
    suite = pytester.path / "suites" / "mechanical"
    suite.mkdir(parents=True)
    shutil.copy(suite_dirs()["mechanical"] / SUITE_MARKER, suite / SUITE_MARKER)
    return ["--tasks=suites/mechanical"]


def bundled_outside_rootdir(pytester: pytest.Pytester) -> list[str]:
    """The default selection of an installed plugin: its sources lie outside the rootdir."""
    return []


def failed_ids(result: pytest.RunResult) -> list[str]:
    return [m.group(1) for line in result.outlines if (m := re.match(r"FAILED (\S+)", line))]


@DISTS
@pytest.mark.parametrize(
    "sources",
    [in_rootdir_tasks, in_rootdir_suite, bundled_outside_rootdir],
    ids=["directory-tasks", "generated-suite", "bundled-outside-rootdir"],
)
def test_a_failed_trials_id_reruns_that_trial(pytester, sources, dist) -> None:
    tasks = sources(pytester)
    full = pytester.runpytest_subprocess(*MOCK, *tasks, "--repeats=3")
    failed = failed_ids(full)
    picked = sorted({failed[0], failed[-1], next(i for i in failed if not i.endswith("::r0"))})
    assert len(picked) >= 2
    # Given back as they were printed, without --repeats: a named repeat runs all the same.
    rerun = pytester.runpytest_subprocess(*MOCK, *tasks, *dist, *picked)
    rerun.assert_outcomes(failed=len(picked))
    assert sorted(failed_ids(rerun)) == sorted(picked)
    runs = list((pytester.path / ".agentbench" / "runs").iterdir())
    assert len(runs) == 2


@DISTS
def test_a_task_id_without_a_repeat_runs_every_repeat(pytester, dist) -> None:
    in_rootdir_suite(pytester)
    generated = f"suites/mechanical/{mechanical.specs()[0].id}"
    result = pytester.runpytest_subprocess(
        "--agent=oracle", "--repeats=3", generated, "crlf-edit", *dist
    )
    result.assert_outcomes(passed=6)


def test_a_whole_source_beside_a_node_id_keeps_all_of_it(pytester) -> None:
    simple_tasks(pytester.path / "tasks", 3)
    result = pytester.runpytest_subprocess(
        "--agent=oracle", "--repeats=2", "tasks/t01::r1", "tasks"
    )
    result.assert_outcomes(passed=6)


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        (
            "tasks/t00::last",
            "ERROR: tasks/t00::last: no such trial; a task's trials are named r0, r1, ... "
            "(one per repeat)",
        ),
        ("tasks/t00::r01", "ERROR: tasks/t00::r01: no such trial*"),
        ("tasks/t00::r0::x", "ERROR: tasks/t00::r0::x: no such trial*"),
        (
            "suites/mechanical/no-such-task::r0",
            "ERROR: suites/mechanical/no-such-task::r0: the suite 'mechanical' (*) has no task "
            "'no-such-task'",
        ),
        ("nowhere::r0", "ERROR: file or directory not found: nowhere::r0"),
        (
            "suites/mechanical/block-copy-file-s10-plane::r0",
            "ERROR: *has no task 'block-copy-file-s10-plane' (closest: "
            "block-copy-file-s10-plain, *)",
        ),
        ("tasks/t0::r0", "ERROR: file or directory not found: tasks/t0::r0 (closest: tasks/t00)"),
    ],
)
def test_a_node_id_that_names_no_trial_is_a_usage_error(pytester, argument, message) -> None:
    simple_tasks(pytester.path / "tasks", 1)
    in_rootdir_suite(pytester)
    result = pytester.runpytest_subprocess("--agent=oracle", "--repeats=2", argument)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert not (pytester.path / ".agentbench").exists()


@DISTS
def test_last_failed_reruns_every_failed_trial_of_mixed_sources(pytester, dist) -> None:
    """Directory tasks below the rootdir, the bundled directory tasks and generated suite
    outside it: --lf reruns the failed trials of each, and only those."""
    tasks = [*in_rootdir_tasks(pytester), "--tasks=builtin:tasks", "--tasks=builtin:mechanical"]
    cached = ["-p", "cacheprovider", *MOCK[2:], *tasks, "--repeats=2"]
    failed = failed_ids(pytester.runpytest_subprocess(*cached))
    assert any(i.startswith("tasks/") for i in failed)  # below the rootdir
    assert any(re.match(r"[\w-]+::r\d$", i) for i in failed)  # outside it
    again = pytester.runpytest_subprocess(*cached, "--lf", *dist)
    again.assert_outcomes(failed=len(failed))
    assert sorted(failed_ids(again)) == sorted(failed)
