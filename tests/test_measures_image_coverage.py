"""Changed-line coverage of a task whose tests run in its own image (Harbor): the task's
test_command runs in a fresh container of the image, on the workspace rebuilt from the change,
and its coverage data are counted on this machine under the names the files had there.

The images are built FROM the local test image, which has python3 but no coverage.py (and no
pip, and no registry is reachable): the measured task's Dockerfile copies this interpreter's
coverage package in, the other's does not.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path, PurePosixPath

import coverage
import docker
import pytest

from pytest_agentbench.grading.coverage import Measured, count, coveragerc
from pytest_agentbench.grading.image_coverage import (
    COVERAGE_DIR,
    MISSING,
    ROOT,
    missing_coverage,
    run_script,
)
from pytest_agentbench.tasks.formats import load_task_dir
from pytest_agentbench.tasks.model import ContainerSpec, TaskError

from conftest import skip_unless_sandbox, write_tree

CALC = "def add(a, b):\n    return a + b\n"
# Six added lines: two blank, then four statements (the def runs on import).
SUB = CALC + "\n\ndef sub(a, b):\n    if a > b:\n        return a - b\n    return b - a\n"
TEST_ADD = "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
TEST_ADD += "    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n"
# The tests leave a file in the workspace, which must never reach the trial's change, and run
# only where /tests is, as it is where the verifier runs (not on this machine), and where the
# file the change deleted from the image's working directory is gone.
COMMAND = (
    "touch tests-ran && test -e /tests/test.sh && test ! -e old.py && "
    "python3 -m unittest -q test_calc"
)
SOLVE = f"""#!/bin/bash
set -e
test ! -e /tests  # the agent (here, the oracle) never sees the tests
rm old.py
cat > calc.py <<'EOF'
{SUB}EOF
"""


FIGURES = ("files_touched", "coverage_lines", "coverage_lines_run", "changed_line_coverage")


def harbor_task(
    root: Path, name: str, with_coverage: bool, command: str = COMMAND, timeout: int = 60
) -> Path:
    task = root / name
    copy = "COPY coverage /usr/lib/python3/dist-packages/coverage\n" if with_coverage else ""
    write_tree(
        task,
        {
            "task.toml": f"[metadata]\ntest_command = {json.dumps(command)}\n"
            f"[verifier]\ntimeout_sec = {timeout}\n",
            "instruction.md": "Add sub(a, b) to calc.py.\n",
            "environment/Dockerfile": f"FROM agentbench-test:1\n{copy}WORKDIR /app\n"
            "COPY calc.py test_calc.py old.py /app/\n",
            "environment/calc.py": CALC,
            "environment/old.py": "OLD = 1\n",
            "environment/test_calc.py": TEST_ADD,
            "tests/test.sh": "grep -q 'def sub' calc.py && r=1 || r=0\n"
            "echo $r > /logs/verifier/reward.txt\n",
            "solution/solve.sh": SOLVE,
        },
    )
    if with_coverage:
        shutil.copytree(
            Path(coverage.__file__).parent,
            task / "environment" / "coverage",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    return task


def observations(run: Path) -> dict[str, dict[str, object]]:
    rows = [json.loads(line) for line in (run / "observations.jsonl").read_text().splitlines()]
    return {row["task"]: row for row in rows}


@pytest.mark.real
def test_coverage_runs_in_the_tasks_image_and_measure_gives_the_same(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skip_unless_sandbox("docker")
    measured = harbor_task(tmp_path, "measured", with_coverage=True)
    bare = harbor_task(tmp_path, "bare", with_coverage=False)
    # The same environment/ (one image): the tests are bounded by the verifier's timeout.
    harbor_task(tmp_path, "slow", with_coverage=True, command="sleep 30", timeout=2)
    result = pytester.runpytest_subprocess(
        "--agent=oracle", "-p", "no:cacheprovider", "--sandbox=docker", f"--tasks={tmp_path}",
        "--agentbench-dir=run", "--agentbench-measure=lines,coverage", "--agentbench-keep=all",
        "--agentbench-concurrency=3",
    )  # fmt: skip
    result.assert_outcomes(passed=3)
    run = pytester.path / "run"
    found = observations(run)
    figures = found["measured"]["measures"]
    assert isinstance(figures, dict)
    assert [figures[key] for key in FIGURES] == [2, 4, 1, 0.25]
    assert found["measured"]["measure_notes"] is None
    assert found["bare"]["measures"]["changed_line_coverage"] is None  # type: ignore[index]
    assert found["bare"]["measure_notes"] == {
        "coverage": "the task's image has no coverage.py for python3; install it in the image "
        f"(add `RUN pip install coverage` to {bare / 'environment' / 'Dockerfile'})"
    }
    assert found["slow"]["measure_notes"] == {"coverage": "the test command timed out after 2 s"}
    spec = load_task_dir(measured).container
    assert spec is not None
    with contextlib.closing(docker.from_env()) as client:
        image = f"agentbench-task:env-{spec.context_hash[:24]}"
        assert client.containers.list(all=True, filters={"ancestor": image}) == []
    # What the tests left in their copy never reached the trial's workspace.
    kept = run / "trials" / "measured-r0" / "workspace"
    assert (kept / "calc.py").read_text() == SUB and not (kept / "tests-ran").exists()
    assert "tests-ran" not in (run / "trials" / "measured-r0" / "change.patch").read_text()
    # Measured again, in the image as in the run (on this machine there is no /tests): the
    # record now holds the coverage figures alone.
    again = pytester.run(
        "agentbench", "measure", "run", "--measure=coverage", f"--tasks={measured}"
    )
    assert again.ret == 0, again.stderr.str()
    assert "measured 1 trial in run (coverage); 2 trials stay" in again.stderr.str()
    remeasured = observations(run)
    assert remeasured["measured"]["measures"] == dict(zip(FIGURES[1:], (4, 1, 0.25), strict=True))
    # With no Docker engine the image's working directory (the input) cannot be read: the
    # trials stay as recorded, and the command says why.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-engine.sock'}")
    offline = pytester.run("agentbench", "measure", "run", "--measure=lines", f"--tasks={tmp_path}")
    assert offline.ret == 0, offline.stderr.str()
    offline.stderr.fnmatch_lines(
        ["measured 0 trials in run (lines); 3 trials stay as recorded: its task runs in its own "
         "image: *no Docker engine answers at unix://*no-engine.sock*"]
    )  # fmt: skip
    assert observations(run) == remeasured


def test_the_script_checks_coverage_then_runs_the_command_where_the_files_really_are() -> None:
    script = run_script("pytest -q 'a b'", "/app", ["gone.py", "sub dir/old.py"])
    lines = script.splitlines()
    assert lines[0] == (
        f"python3 -c 'import coverage' 2>/dev/null || {{ : > {COVERAGE_DIR}/{MISSING}; exit 0; }}"
    )
    assert lines[1:4] == [
        "cd /app || exit 126",
        "root=$(pwd -P)",
        f'printf %s "$root" > {COVERAGE_DIR}/{ROOT}',
    ]
    # The configuration names the real path, expanded by the shell (an unquoted here-document).
    rc = coveragerc(f"{COVERAGE_DIR}/data/.coverage", "$root")
    assert f"cat > {COVERAGE_DIR}/coveragerc <<EOF\n{rc}EOF\n" in script
    assert "rm -f -- gone.py\nrm -f -- 'sub dir/old.py'\n" in script
    assert lines[-1] == "exec sh -c 'pytest -q '\"'\"'a b'\"'\"''"
    assert f"export PYTHONPATH={COVERAGE_DIR}/hook${{PYTHONPATH:+:$PYTHONPATH}}" in lines


def test_the_reason_for_an_image_without_coverage_names_the_fix(tmp_path: Path) -> None:
    built = ContainerSpec(tmp_path / "environment", "h", tmp_path / "tests", "/tests/test.sh")
    assert missing_coverage(built).endswith(
        f"(add `RUN pip install coverage` to {tmp_path / 'environment' / 'Dockerfile'})"
    )
    prebuilt = ContainerSpec(built.context, "h", built.tests, "/x", image="mine:1")
    assert missing_coverage(prebuilt).endswith(
        "(use a docker_image that has it (task.toml names mine:1))"
    )


def _measure_in(tmp_path: Path, where: str, source: str) -> Measured:
    """Data of a real coverage.py run of source measured as if it lay at where/calc.py."""
    data = tmp_path / "data"
    data.mkdir()
    measured_at = Path(where)
    measured_at.mkdir(parents=True, exist_ok=True)
    (measured_at / "calc.py").write_text(source)
    cov = coverage.Coverage(data_file=str(data / ".coverage"), config_file=False, data_suffix=True)
    cov.start()
    try:
        namespace: dict[str, object] = {}
        exec(compile(source, str(measured_at / "calc.py"), "exec"), namespace)
        namespace["sub"](3, 1)  # type: ignore[operator]
    finally:
        cov.stop()
    cov.save()
    return Measured(data, PurePosixPath(measured_at))


def test_counting_maps_the_names_of_where_the_tests_ran_to_the_host_copy(tmp_path: Path) -> None:
    """Data recorded under another directory (the container's /app) count against the host's
    rebuilt copy, file by file relative to the two roots."""
    measured = _measure_in(tmp_path, str(tmp_path / "elsewhere" / "app"), SUB)
    host = tmp_path / "host"
    host.mkdir()
    (host / "calc.py").write_text(SUB)
    added = {"calc.py": {3, 4, 5, 6, 7, 8}}
    unmapped = Measured(tmp_path / "copy", PurePosixPath(host))
    shutil.copytree(measured.data, unmapped.data)  # counting combines (and so uses up) the data
    figures, why = count(measured, host, added)
    assert why is None
    # sub(3, 1) ran its def, its if and the first return; the second return did not run.
    assert figures == {"coverage_lines": 4, "coverage_lines_run": 3, "changed_line_coverage": 0.75}
    # Looked up under the host's own path, the same data hold nothing for the file: the
    # mapping is what finds them.
    assert count(unmapped, host, added)[0]["coverage_lines_run"] == 0


def test_a_harbor_test_command_is_read_from_metadata(tmp_path: Path) -> None:
    task = harbor_task(tmp_path, "t", with_coverage=False)
    assert load_task_dir(task).test_command == COMMAND
    (task / "task.toml").write_text('[metadata]\ntest_command = "  "\n')
    with pytest.raises(TaskError, match=f"^{task / 'task.toml'}: field 'test_command' is empty"):
        load_task_dir(task)
