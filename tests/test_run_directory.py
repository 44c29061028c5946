"""The run directory survives: fsynced observations, artifacts, resume after SIGKILL."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny_tasks import TINY_RUN, slow_suite

from pytest_agentbench.run.store import read_observations
from pytest_agentbench.trial.artifacts import SECRET_PATTERNS, scrub

DIST = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
BASE = TINY_RUN


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Path:
    return slow_suite(pytester)


def report_of(path: Path) -> dict:
    return json.loads(path.read_text())


def same_results(a: Path, b: Path) -> None:
    first, second = report_of(a), report_of(b)
    assert first["summary"] == second["summary"]
    assert first["tasks"] == second["tasks"]


def start(pytester: pytest.Pytester, *args: str, **env: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", *BASE, *args],
        cwd=pytester.path,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """Kill what is left of the run we started (orphaned xdist workers) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


@DIST
def test_run_directory_holds_every_trial(
    pytester: pytest.Pytester, suite: Path, dist: list[str]
) -> None:
    result = pytester.runpytest_subprocess(*BASE, "--agentbench-dir=run", *dist)
    result.stdout.fnmatch_lines(["*agentbench run directory: *run"])
    observations, notice = read_observations(pytester.path / "run" / "observations.jsonl")
    assert notice is None
    assert sorted((o["task"], o["repeat"]) for o in observations) == [
        (f"t{i:02d}", r) for i in range(12) for r in range(2)
    ]
    run = json.loads((pytester.path / "run" / "run.json").read_text())
    assert run["identity"]["agent"] == "mock" and run["identity"]["sandbox"] == {
        "kind": "tmp",
        "image": None,
    }
    assert set(run["tasks"]) == {f"t{i:02d}" for i in range(12)}
    assert run["finished_at"]
    passed = next(o for o in observations if o["final_exact"])
    trial = pytester.path / "run" / "trials" / f"{passed['task']}-r{passed['repeat']}"
    diff = (trial / "diff.patch").read_text()
    assert "--- a/notes.txt" in diff and "+++ b/notes.txt" in diff
    # The mock starts no process: its output files would be empty, and empty ones are not written.
    assert {p.name for p in trial.iterdir()} == {
        *("diff.patch", "change.patch", "trajectory.json", "raw.jsonl.gz")
    }


def test_artifacts_that_cannot_be_written_are_reported_and_lose_no_trial(
    pytester: pytest.Pytester, suite: Path
) -> None:
    trials = pytester.path / "run" / "trials"
    trials.mkdir(parents=True)
    for name in ("t01-r0", "t01-r1"):  # files where the trials' directories belong
        (trials / name).write_text("in the way")
    result = pytester.runpytest_subprocess(*BASE, "--agentbench-dir=run", "-k", "t01 or t02")
    reported = [line for line in result.outlines if "agentbench artifacts: " in line]
    assert all(f"could not write {trials}/t01-r" in line for line in reported)
    named = {line.split(f"{trials}/")[1].split("/")[0] for line in reported}
    assert named == {"t01-r0", "t01-r1"}
    observations, _ = read_observations(pytester.path / "run" / "observations.jsonl")
    assert len(observations) == 4
    assert all((trials / f"t02-r{r}" / "diff.patch").exists() for r in range(2))


def test_default_run_directory_is_named_after_the_run_id(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.runpytest_subprocess(*BASE, "-k", "t00")
    runs = list((pytester.path / ".agentbench" / "runs").iterdir())
    assert len(runs) == 1 and lines(runs[0] / "observations.jsonl") == 2
    assert json.loads((runs[0] / "run.json").read_text())["run_id"] == runs[0].name


@DIST
@pytest.mark.parametrize(
    ("selection", "exit_code"),
    [
        (["-k", "nomatch"], pytest.ExitCode.NO_TESTS_COLLECTED),
        (["--collect-only"], pytest.ExitCode.OK),
        (["tiny-tasks/t00::9"], pytest.ExitCode.USAGE_ERROR),
        (["tiny-tasks/t99::r0"], pytest.ExitCode.USAGE_ERROR),
    ],
    ids=["nothing-selected", "collect-only", "no-such-repeat", "no-such-task"],
)
def test_a_run_with_nothing_to_run_leaves_no_run_directory(
    pytester: pytest.Pytester,
    suite: Path,
    selection: list[str],
    exit_code: pytest.ExitCode,
    dist: list[str],
) -> None:
    result = pytester.runpytest_subprocess(*BASE, *selection, *dist)
    assert result.ret == exit_code
    assert not (pytester.path / ".agentbench").exists()


def test_a_collection_error_leaves_no_run_directory(pytester: pytest.Pytester, suite: Path) -> None:
    """Serial pytest stops at a collection error (xdist runs the other trials: they are kept)."""
    pytester.makepyfile(test_broken="def test_x(:\n")
    result = pytester.runpytest_subprocess(*BASE, "tiny-tasks", "test_broken.py")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert not (pytester.path / ".agentbench").exists()


def test_scrub_removes_secret_values_and_token_shapes() -> None:
    text = "key sk-abcdefghijklmnopqrstu and MY_API_TOKEN=hunter2hunter2 password: s3cr3tpass"
    out = scrub(text, {"MY_API_TOKEN": "hunter2hunter2", "HOME": "/root"})
    assert "sk-abc" not in out and "hunter2" not in out and "s3cr3tpass" not in out
    assert "[scrubbed:MY_API_TOKEN]" in out


# Letters that re.IGNORECASE matches to ASCII ones: LONG S, KELVIN SIGN, dotted and dotless I.
FOLDING = "\u017f\u212a\u0130\u0131"
SCRUB_ALPHABET = "abcdeiklnoprstwxyABEKPRST0123456789_-:= \"'\n" + FOLDING
SCRUB_WORDS = ["sk-", "ghp_", "xoxb-", "AKIA", "bearer ", "Bearer ", "api_key=", "PASSWORD="]
SCRUB_WORDS += ["\u017fecret:", "to\u212aen="]


@given(st.lists(st.sampled_from(SCRUB_WORDS) | st.text(SCRUB_ALPHABET, max_size=24), max_size=8))
@settings(max_examples=300, deadline=None)
def test_scrub_word_filter_skips_only_expressions_that_cannot_match(parts: list[str]) -> None:
    text = "".join(parts)
    unfiltered = text
    for pattern, _words in SECRET_PATTERNS:
        unfiltered = pattern.sub(
            lambda m: (m.group(1) if m.re.groups else "") + "[scrubbed]", unfiltered
        )
    assert scrub(text, {}) == unfiltered


@DIST
def test_resume_after_killing_the_controller_equals_an_uninterrupted_run(
    pytester: pytest.Pytester, suite: Path, dist: list[str]
) -> None:
    pytester.runpytest_subprocess(*BASE, "--agentbench-dir=ref", "--agentbench-json=ref.json")
    observations = pytester.path / "run" / "observations.jsonl"
    process = start(pytester, "--agentbench-dir=run", *dist, AGENTBENCH_TEST_DELAY="0.3")
    try:
        wait_for(lambda: lines(observations) >= 4)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        stop_group(process)
    recorded = lines(observations)
    assert 4 <= recorded < 24, "the kill must land mid-run"
    result = pytester.runpytest_subprocess(
        *BASE, "--agentbench-resume=run", "--agentbench-json=resumed.json", *dist
    )
    result.stdout.fnmatch_lines([f"agentbench resume: {recorded} trials reused from *run"])
    same_results(pytester.path / "ref.json", pytester.path / "resumed.json")
    assert lines(observations) == 24


def test_resume_after_killing_an_xdist_worker_equals_an_uninterrupted_run(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.runpytest_subprocess(*BASE, "--agentbench-dir=ref", "--agentbench-json=ref.json")
    pids = pytester.mkdir("pids")
    observations = pytester.path / "run" / "observations.jsonl"
    process = start(
        pytester,
        "--agentbench-dir=run",
        "-n",
        "2",
        AGENTBENCH_TEST_DELAY="0.3",
        AGENTBENCH_TEST_PIDS=str(pids),
    )
    try:
        wait_for(lambda: lines(observations) >= 4 and any(pids.iterdir()))
        worker = int(sorted(pids.iterdir())[0].name.removeprefix("worker-"))
        os.kill(worker, signal.SIGKILL)
        process.wait(timeout=120)
    finally:
        stop_group(process)
    assert lines(observations) < 24, "the killed worker's trial must be missing"
    result = pytester.runpytest_subprocess(
        *BASE, "--agentbench-resume=run", "--agentbench-json=resumed.json", "-n", "2"
    )
    result.assert_outcomes(**report_outcomes(pytester.path / "ref.json"))
    same_results(pytester.path / "ref.json", pytester.path / "resumed.json")


def report_outcomes(path: Path) -> dict[str, int]:
    observations = report_of(path)["observations"]
    passed = sum(1 for o in observations if o["final_exact"])
    return {"passed": passed, "failed": len(observations) - passed}


def test_truncated_last_line_is_dropped_with_a_notice(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.runpytest_subprocess(*BASE, "--agentbench-dir=run", "--agentbench-json=ref.json")
    path = pytester.path / "run" / "observations.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[: data.rfind(b"\n", 0, len(data) - 1) + 40])  # torn last line
    result = pytester.runpytest_subprocess(
        *BASE, "--agentbench-resume=run", "--agentbench-json=resumed.json"
    )
    result.stdout.fnmatch_lines(["*dropped a truncated last line*", "*23 trials reused*"])
    same_results(pytester.path / "ref.json", pytester.path / "resumed.json")
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_resume_refuses_another_identity_naming_each_field(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.runpytest_subprocess(*BASE, "--agentbench-dir=run", "-k", "t00")
    result = pytester.runpytest_subprocess(
        *BASE, "--agentbench-resume=run", "--model=other", "--agent-opt", "pass_prob=0.1"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*measured a different configuration; differing fields:",
            "*agent_opts.pass_prob: recorded unset, now '0.1'",
            "*model: recorded unset, now 'other'",
        ]
    )


@DIST
def test_resume_refuses_a_changed_task(
    pytester: pytest.Pytester, suite: Path, dist: list[str]
) -> None:
    pytester.runpytest_subprocess(*BASE, "--agentbench-dir=run")
    (suite / "t03" / "expected" / "notes.txt").write_text("changed\n")
    result = pytester.runpytest_subprocess(*BASE, "--agentbench-resume=run", *dist)
    result.stdout.fnmatch_lines(["*the task changed since it was recorded*"])
    assert result.ret != 0
    assert "passed" not in result.parseoutcomes()


def test_resume_alone_continues_with_the_recorded_settings(
    pytester: pytest.Pytester, suite: Path
) -> None:
    settings = [*BASE, "--model=m1", "--agentbench-seed=7", "--agent-opt", "pass_prob=0.5"]
    settings.append("--agentbench-label=nightly")
    pytester.runpytest_subprocess(*settings, "--agentbench-dir=ref", "--agentbench-json=ref.json")
    pytester.runpytest_subprocess(*settings, "--agentbench-dir=run", "--agentbench-json=run.json")
    recorded = json.loads((pytester.path / "run" / "run.json").read_text())["settings"]
    path = pytester.path / "run" / "observations.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:5]))

    result = pytester.runpytest_subprocess("-p", "no:randomly", "--agentbench-resume=run")
    result.stdout.fnmatch_lines(["agentbench: agent mock*, model m1, *repeats 2, *seed 7"])
    result.stdout.fnmatch_lines(["agentbench resume: 5 trials reused from *run"])
    result.stdout.fnmatch_lines(["nightly: agent mock *"])
    same_results(pytester.path / "ref.json", pytester.path / "run.json")
    assert json.loads((pytester.path / "run" / "run.json").read_text())["settings"] == recorded

    refused = pytester.runpytest_subprocess("--agentbench-resume=run", "--model=other")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*model: recorded 'm1', now 'other'"])


RECORDS = st.lists(
    st.fixed_dictionaries(
        {"task": st.text(max_size=5), "repeat": st.integers(0, 3)},
        optional={"note": st.text(max_size=8), "tokens": st.none() | st.integers()},
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(records=RECORDS, blanks=st.lists(st.integers(0, 30), max_size=4))
def test_observations_read_in_batches_are_those_of_each_line(
    records: list[dict], blanks: list[int], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Lines are parsed a batch at a time (store.BATCH); the records are each line's, in order."""
    import pytest_agentbench.run.store as store

    lines = [json.dumps(record) for record in records]
    for at in sorted(blanks, reverse=True):
        lines.insert(min(at, len(lines)), "  ")
    path = tmp_path_factory.mktemp("batches") / "observations.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    original, store.BATCH = store.BATCH, 4
    try:
        assert read_observations(path) == (records, None)
    finally:
        store.BATCH = original


def test_a_line_holding_two_records_is_named_as_damaged(tmp_path: Path) -> None:
    one = json.dumps({"task": "a", "repeat": 0})
    path = tmp_path / "observations.jsonl"
    path.write_text(f"{one}\n{one}, {one}\n{one}\n")
    with pytest.raises(ValueError, match=r"observations.jsonl:2: not a JSON line"):
        read_observations(path)
