"""--agentbench-cache: a study publishes its scored vanilla trials; a later study of the same
vanilla configuration reuses them instead of running them, and nothing of another
configuration or of a changed task."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_baseline import MOCK, arms_file, figures, recorded, run_id
from tiny_tasks import make_tasks

from pytest_agentbench.commands.status import render, status
from pytest_agentbench.run.cache import TRIALS_FILE, BaselineCache
from pytest_agentbench.run.store import read_observations

DIST = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])


def entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if p.is_dir())


@DIST
def test_a_second_study_reuses_every_cached_vanilla_trial(
    pytester: pytest.Pytester, dist: list[str]
) -> None:
    make_tasks(pytester.path, 3)
    first = arms_file(pytester.path, "core", "Keep diffs small.\n")
    published = pytester.runpytest_subprocess(
        *MOCK, f"--arms={first}", "--agentbench-dir=one", "--agentbench-cache=cache", *dist
    )
    (entry,) = entries(pytester.path / "cache")
    published.stdout.fnmatch_lines([f"agentbench cache: 6 vanilla trials published to {entry}"])
    second = arms_file(pytester.path, "terse", "Answer tersely.\n")
    result = pytester.runpytest_subprocess(
        *MOCK,
        f"--arms={second}",
        "--agentbench-dir=two",
        "--agentbench-cache=cache",
        "--agentbench-json=two.json",
        *dist,
    )
    one_dir, two_dir = pytester.path / "one", pytester.path / "two"
    vanilla_one = [o for o in recorded(one_dir) if o["arm"] == "vanilla"]
    vanilla_two = [o for o in recorded(two_dir) if o["arm"] == "vanilla"]
    assert len(vanilla_two) == 6
    # Zero vanilla trials ran again: the first study's own records, figures and ids alike.
    assert figures(vanilla_two) == figures(vanilla_one)
    assert {o["trial_id"] for o in vanilla_two} == {o["trial_id"] for o in vanilla_one}
    assert {o["reused_from"] for o in vanilla_two} == {str(one_dir.resolve())}
    terse = [o for o in recorded(two_dir) if o["arm"] == "terse"]
    assert len(terse) == 6 and all(o["trial_id"].startswith(run_id(two_dir)) for o in terse)
    assert all("reused_from" not in o for o in terse)
    result.stdout.fnmatch_lines(
        [
            f"agentbench cache: {pytester.path / 'cache'} holds 6 scored vanilla trials of this "
            "configuration (from 1 run)",
            f"agentbench cache: 6 trials reused from {one_dir.resolve()}",
            f"vanilla reused: 6 of 6 scored vanilla trials from {one_dir.resolve()}; "
            "not interleaved with the treatments' trials",
        ]
    )
    assert "vanilla trials published" not in result.stdout.str()  # reused ones are not again
    block = json.loads((pytester.path / "two.json").read_text())["arms"]
    assert block["vanilla_reused"] == {"trials": 6, "scored": 6, "runs": [str(one_dir.resolve())]}
    assert [pair["vanilla_reused"] for pair in block["paired"]] == [6]
    assert len(read_observations(entry / TRIALS_FILE)[0]) == 6  # nothing published twice
    # `agentbench status` of the second study: per arm, the reused baselines and their run.
    doc = status(two_dir)
    assert doc["baselines"] == {"trials": 6, "runs": [str(one_dir.resolve())]}
    assert doc["arms"]["vanilla"]["reused"] == 6 and doc["arms"]["terse"]["reused"] == 0
    text = render(doc)
    assert f"baselines reused from other studies: 6 trials (from {one_dir.resolve()})" in text
    assert not any(line.startswith("reused from the run resumed") for line in text)
    assert any(line.startswith("  vanilla: 6 done") and "6 reused" in line for line in text)


def test_a_changed_task_runs_again_and_its_new_version_is_cached_too(
    pytester: pytest.Pytester,
) -> None:
    tasks = make_tasks(pytester.path, 3)
    pytester.runpytest_subprocess(*MOCK, "--agentbench-dir=plain", "--agentbench-cache=cache")
    (tasks / "t01" / "workspace" / "notes.txt").write_text("task 1\nstatus: draft\nmore\n")
    (tasks / "t01" / "expected" / "notes.txt").write_text("task 1\nstatus: final\nmore\n")
    arms = arms_file(pytester.path, "core", "Keep diffs small.\n")
    study = ["--agentbench-cache=cache", f"--arms={arms}"]
    pytester.runpytest_subprocess(*MOCK, *study, "--agentbench-dir=study")
    plain_id, study_id = run_id(pytester.path / "plain"), run_id(pytester.path / "study")
    vanilla = [o for o in recorded(pytester.path / "study") if o["arm"] == "vanilla"]
    reused = {(o["task"], o["repeat"]) for o in vanilla if o["trial_id"].startswith(plain_id)}
    ran = {(o["task"], o["repeat"]) for o in vanilla if o["trial_id"].startswith(study_id)}
    assert reused == {(t, r) for t in ("t00", "t02") for r in (0, 1)}
    assert ran == {("t01", r) for r in (0, 1)}
    # The changed task's trials are cached beside the old version's: a third study pays for none.
    pytester.runpytest_subprocess(*MOCK, *study, "--agentbench-dir=third")
    third = [o for o in recorded(pytester.path / "third") if o["arm"] == "vanilla"]
    assert len(third) == 6 and all("reused_from" in o for o in third)
    assert {o["trial_id"] for o in third} == {o["trial_id"] for o in vanilla}


def test_another_configuration_reads_none_of_the_cache(pytester: pytest.Pytester) -> None:
    make_tasks(pytester.path, 2)
    pytester.runpytest_subprocess(*MOCK, "--agentbench-dir=one", "--model=m1",
                                  "--agentbench-cache=cache")  # fmt: skip
    result = pytester.runpytest_subprocess(
        *MOCK, "--agentbench-dir=two", "--model=m2", "--agentbench-cache=cache"
    )
    two_id = run_id(pytester.path / "two")
    assert all(o["trial_id"].startswith(two_id) for o in recorded(pytester.path / "two"))
    result.stdout.fnmatch_lines(
        [
            f"agentbench cache: {pytester.path / 'cache'} holds 0 scored vanilla trials of this "
            "configuration (from 0 runs)"
        ]
    )
    assert len(entries(pytester.path / "cache")) == 2  # one entry per configuration


def test_the_ini_names_the_cache_relative_to_the_ini_file(pytester: pytest.Pytester) -> None:
    make_tasks(pytester.path, 1)
    pytester.makeini("[pytest]\nagentbench_cache = shared/cache\n")
    other = pytester.mkdir("elsewhere")
    pytester.runpytest_subprocess(*MOCK, f"--rootdir={pytester.path}",
                                  f"--tasks={pytester.path / 'tiny-tasks'}")  # fmt: skip
    assert entries(pytester.path / "shared" / "cache")
    assert not (other / "shared").exists()


def test_a_damaged_entry_is_a_usage_error_naming_the_line_and_the_fix(
    pytester: pytest.Pytester,
) -> None:
    make_tasks(pytester.path, 1)
    pytester.runpytest_subprocess(*MOCK, "--agentbench-cache=cache")
    (entry,) = entries(pytester.path / "cache")
    lines = (entry / TRIALS_FILE).read_text().splitlines(keepends=True)
    (entry / TRIALS_FILE).write_text("{not json\n" + "".join(lines))
    result = pytester.runpytest_subprocess(*MOCK, "--agentbench-cache=cache")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [
            f"*--agentbench-cache *cache: {entry / TRIALS_FILE}:1: not a JSON line*"
            f"remove {entry / TRIALS_FILE} to start the entry afresh"
        ]
    )


PUBLISHER = """
import sys
from pathlib import Path
from pytest_agentbench.run.cache import BaselineCache

root, writer = Path(sys.argv[1]), sys.argv[2]
for repeat in range(40):
    filler = "x" * 70_000
    observation = {"task": "w" + writer, "repeat": repeat, "status": "scored", "filler": filler}
    BaselineCache(root).publish({"model": "m"}, observation, root / ("run-" + writer))
"""


def test_runs_publishing_at_once_never_interleave_their_lines(tmp_path: Path) -> None:
    """Lines far above the pipe buffer, appended by two processes: each whole, none lost."""
    writers = [
        subprocess.Popen([sys.executable, "-c", PUBLISHER, str(tmp_path), str(n)]) for n in (0, 1)
    ]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0]
    published = BaselineCache(tmp_path).read({"model": "m"})
    assert sorted((o["task"], o["repeat"]) for o in published) == sorted(
        (f"w{n}", r) for n in (0, 1) for r in range(40)
    )
    assert all(o["reused_from"] == str(tmp_path / f"run-{o['task'][1]}") for o in published)


def test_a_torn_last_line_left_by_a_killed_run_is_dropped(tmp_path: Path) -> None:
    cache = BaselineCache(tmp_path)
    cache.publish({"model": "m"}, {"task": "a", "repeat": 0, "status": "scored"},  # type: ignore[arg-type]
                  tmp_path / "run")  # fmt: skip
    with open(cache.entry({"model": "m"}) / TRIALS_FILE, "a") as handle:
        handle.write('{"task": "b", "rep')
    assert [o["task"] for o in cache.read({"model": "m"})] == ["a"]
    assert read_observations(cache.entry({"model": "m"}) / TRIALS_FILE)[1] is not None


def test_a_null_field_and_an_absent_one_name_the_same_entry(tmp_path: Path) -> None:
    cache = BaselineCache(tmp_path)
    assert cache.entry({"model": "m", "label": None}) == cache.entry({"model": "m"})
    assert cache.entry({"model": "m", "sandbox": {"kind": "tmp"}}) != cache.entry({"model": "m"})
