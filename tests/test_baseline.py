"""--agentbench-baseline: a second study reuses the first study's trials of the same
configuration (its vanilla arm, or a plain run) and nothing whose task changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiny_tasks import make_tasks

from pytest_agentbench.run.store import read_observations

DIST = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
MOCK = ["-p", "no:randomly", "-p", "no:cacheprovider", "--agent=mock", "--sandbox=tmp",
        "--tasks=tiny-tasks", "--repeats=2", "--agent-opt=pass_prob=0.5"]  # fmt: skip


def arms_file(root: Path, name: str, guidance: str) -> Path:
    """An arms file with one treatment NAME (vanilla is always there)."""
    (root / f"{name}.md").write_text(guidance)
    path = root / f"{name}-arms.toml"
    path.write_text(f'[arm.{name}]\nguidance = ["{name}.md"]\n')
    return path


def recorded(run: Path) -> list[dict]:
    observations, notice = read_observations(run / "observations.jsonl")
    assert notice is None
    return observations


def run_id(run: Path) -> str:
    return json.loads((run / "run.json").read_text())["run_id"]


def figures(observations: list[dict]) -> list[tuple]:
    return sorted(
        (o["task"], o["repeat"], o["first_exact"], o["final_exact"], o["tokens"]["output"])
        for o in observations
    )


@DIST
def test_a_second_study_reuses_every_vanilla_trial_of_the_first(
    pytester: pytest.Pytester, dist: list[str]
) -> None:
    make_tasks(pytester.path, 3)
    first = arms_file(pytester.path, "core", "Keep diffs small.\n")
    pytester.runpytest_subprocess(*MOCK, f"--arms={first}", "--agentbench-dir=one", *dist)
    second = arms_file(pytester.path, "terse", "Answer tersely.\n")
    result = pytester.runpytest_subprocess(
        *MOCK, f"--arms={second}", "--agentbench-dir=two", "--agentbench-baseline=one", *dist
    )
    one, two = recorded(pytester.path / "one"), recorded(pytester.path / "two")
    vanilla_one = [o for o in one if o["arm"] == "vanilla"]
    vanilla_two = [o for o in two if o["arm"] == "vanilla"]
    assert len(vanilla_two) == 6
    # Not run again: the first study's trials themselves, figures and trial ids alike.
    assert figures(vanilla_two) == figures(vanilla_one)
    assert {o["trial_id"] for o in vanilla_two} == {o["trial_id"] for o in vanilla_one}
    assert all(o["trial_id"].startswith(run_id(pytester.path / "one")) for o in vanilla_two)
    terse = [o for o in two if o["arm"] == "terse"]
    assert len(terse) == 6
    assert all(o["trial_id"].startswith(run_id(pytester.path / "two")) for o in terse)
    result.stdout.fnmatch_lines(
        [
            f"agentbench baseline: 6 scored trials of {pytester.path / 'one'} match this run",
            f"agentbench baseline: 6 trials reused from {pytester.path / 'one'}",
        ]
    )


def test_a_changed_task_reuses_none_of_its_trials_and_a_plain_run_serves_vanilla(
    pytester: pytest.Pytester,
) -> None:
    tasks = make_tasks(pytester.path, 3)
    pytester.runpytest_subprocess(*MOCK, "--agentbench-dir=plain")
    (tasks / "t01" / "workspace" / "notes.txt").write_text("task 1\nstatus: draft\nmore\n")
    (tasks / "t01" / "expected" / "notes.txt").write_text("task 1\nstatus: final\nmore\n")
    arms = arms_file(pytester.path, "core", "Keep diffs small.\n")
    pytester.runpytest_subprocess(
        *MOCK, f"--arms={arms}", "--agentbench-dir=study", "--agentbench-baseline=plain"
    )
    plain_id, study_id = run_id(pytester.path / "plain"), run_id(pytester.path / "study")
    vanilla = [o for o in recorded(pytester.path / "study") if o["arm"] == "vanilla"]
    reused = {(o["task"], o["repeat"]) for o in vanilla if o["trial_id"].startswith(plain_id)}
    ran = {(o["task"], o["repeat"]) for o in vanilla if o["trial_id"].startswith(study_id)}
    repeats = {o["repeat"] for o in vanilla}
    assert len(repeats) == 2
    assert reused == {(t, r) for t in ("t00", "t02") for r in repeats}
    assert ran == {("t01", r) for r in repeats}


def test_a_baseline_of_another_configuration_is_not_used(pytester: pytest.Pytester) -> None:
    make_tasks(pytester.path, 2)
    pytester.runpytest_subprocess(*MOCK, "--agentbench-dir=one", "--model=m1")
    result = pytester.runpytest_subprocess(
        *MOCK, "--agentbench-dir=two", "--model=m2", "--agentbench-baseline=one"
    )
    two_id = run_id(pytester.path / "two")
    assert all(o["trial_id"].startswith(two_id) for o in recorded(pytester.path / "two"))
    result.stdout.fnmatch_lines(
        [f"agentbench baseline: 0 scored trials of {pytester.path / 'one'} match this run"]
    )
    missing = pytester.runpytest_subprocess(*MOCK, "--agentbench-baseline=nowhere")
    assert missing.ret == 4
    missing.stderr.fnmatch_lines(["*--agentbench-baseline *nowhere: *"])
