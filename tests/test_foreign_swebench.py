"""SWE-bench instances run as they are: each in its evaluation image, graded by the swebench
package's own eval script, log parser and report.

tests/fixtures/swebench is a tiny instance's repository and image, built FROM the local test
image by .ci/install-swebench.sh: calc.py's add() subtracts. It borrows the name and version of
pytest-dev/pytest 8.0, so swebench picks that repository's test command (pytest -rA) and log
parser. Its test_patch adds test_add (FAIL_TO_PASS) beside test_sub (PASS_TO_PASS); the gold
patch fixes add(); the wrong patch fixes add() and breaks sub().
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.tasks.sources import bring_own_images
from pytest_agentbench.tasks.swebench import image_name, load_instances, require_swebench

from conftest import skip_unless_sandbox

# swebench (and pyarrow below it) imported once, up front: an import first made during a pytester
# run in this process would be dropped after it, and pyarrow refuses to be imported twice.
with contextlib.suppress(ImportError):
    import swebench.harness.grading  # noqa: F401

FIXTURE = Path(__file__).parent / "fixtures" / "swebench"
IMAGE = "agentbench-swebench-tiny:1"
DOCKER = ("-p", "no:cacheprovider", "--sandbox=docker")
F2P = "tests/test_calc.py::test_add"
P2P = "tests/test_calc.py::test_sub"


def instance(instance_id: str = "pytest-dev__pytest-90001", **fields: Any) -> dict[str, Any]:
    """The tiny instance; fields replace its own."""
    return {
        "instance_id": instance_id,
        "repo": "pytest-dev/pytest",
        "version": "8.0",
        "base_commit": "0123abc",
        "problem_statement": "calc.add(2, 3) returns -1; it should return 5.\n",
        "patch": (FIXTURE / "gold.patch").read_text(),
        "test_patch": (FIXTURE / "test.patch").read_text(),
        "FAIL_TO_PASS": json.dumps([F2P]),  # a JSON string, as the datasets ship it
        "PASS_TO_PASS": [P2P],  # or a list
        "image": IMAGE,
        **fields,
    }


def write_instances(path: Path, *lines: dict[str, Any] | str) -> Path:
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines))
    return path


def test_the_fields_map_onto_the_task(tmp_path: Path) -> None:
    (loaded,) = load_instances(write_instances(tmp_path / "verified.jsonl", instance()))
    task = loaded.task
    assert task is not None and loaded.error is None
    spec = task.container
    assert spec is not None and spec.instance is not None
    assert task.prompt == "calc.add(2, 3) returns -1; it should return 5.\n"
    assert (task.id, spec.image, spec.workdir) == ("pytest-dev__pytest-90001", IMAGE, "/testbed")
    assert spec.instance["FAIL_TO_PASS"] == [F2P] and spec.instance["PASS_TO_PASS"] == [P2P]
    assert task.meta == {"format": "swebench", "repo": "pytest-dev/pytest", "version": "8.0"}
    assert "image" not in spec.instance  # the official fields alone reach swebench


def test_images_are_named_as_swebench_names_them(tmp_path: Path) -> None:
    assert image_name("django__django-11099") == "sweb.eval.x86_64.django_1776_django-11099:latest"
    local = "registry.local:5000/sweb.eval.x86_64.{id}:v1"
    assert (
        image_name("Django__Django-1", local)
        == "registry.local:5000/sweb.eval.x86_64.django__django-1:v1"
    )
    path = write_instances(tmp_path / "i.jsonl", {**instance(), "image": ""}, instance("a__b-2"))
    del_image = {k: v for k, v in instance("c__d-3").items() if k != "image"}
    write_instances(path, del_image)
    (loaded,) = load_instances(path, "mirror/{hub_id}:latest")
    assert loaded.task is not None and loaded.task.container is not None
    assert loaded.task.container.image == "mirror/c_1776_d-3:latest"


def test_a_different_image_is_a_different_fixture(tmp_path: Path) -> None:
    path = write_instances(tmp_path / "i.jsonl", instance())
    (one,) = load_instances(path)
    write_instances(path, instance(image="other:1"))
    (two,) = load_instances(path)
    assert one.task is not None and two.task is not None
    assert one.task.fixture_hash != two.task.fixture_hash


BAD_LINES = [
    ("{not json", "not JSON"),
    ("[1, 2]", "expected a JSON object (an instance), got list"),
    (instance(FAIL_TO_PAS=[F2P]), "unknown field 'FAIL_TO_PAS' (did you mean `FAIL_TO_PASS`?)"),
    ({k: v for k, v in instance().items() if k != "test_patch"}, "field 'test_patch' is missing"),
    (instance(FAIL_TO_PASS="not a list"), "field 'FAIL_TO_PASS' must be a list of test names"),
    (instance(PASS_TO_PASS=[1]), "field 'PASS_TO_PASS' must be a list of test names"),
    (instance(FAIL_TO_PASS="[]"), "field 'FAIL_TO_PASS' is empty"),
    (instance(base_commit="main"), "field 'base_commit' 'main': expected a commit hash"),
    (instance(version=8.0), "field 'version' must be a string"),
    (instance("has space"), "field 'instance_id' 'has space': expected owner__repo-number"),
    (instance(problem_statement=" "), "field 'problem_statement' is empty"),
]


@pytest.mark.parametrize(("line", "message"), BAD_LINES)
def test_a_bad_line_names_the_file_line_and_field_and_the_rest_load(
    tmp_path: Path, line: dict[str, Any] | str, message: str
) -> None:
    path = write_instances(tmp_path / "i.jsonl", instance("a__b-1"), "", line, instance("a__b-2"))
    first, bad, last = load_instances(path)
    assert (first.error, last.error) == (None, None)
    assert bad.task is None and bad.error is not None
    assert bad.error.startswith(f"{path}:3: ")
    assert message in bad.error


def test_an_instance_given_twice_is_named_with_its_first_line(tmp_path: Path) -> None:
    path = write_instances(tmp_path / "i.jsonl", instance(), instance())
    first, second = load_instances(path)
    assert first.error is None
    assert second.error == (
        f"{path}:2: instance_id 'pytest-dev__pytest-90001' is also on line 1; give each "
        "instance once"
    )


def test_swebench_sources_spare_the_docker_image(tmp_path: Path) -> None:
    path = write_instances(tmp_path / "i.jsonl", instance())
    assert bring_own_images((f"swebench:{path}",), tmp_path)


def test_without_swebench_the_run_says_which_pip_command_to_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    require_swebench(Path("i.jsonl"))  # installed here: nothing to say
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ValueError) as raised:
        require_swebench(Path("i.jsonl"))
    assert str(raised.value) == (
        "--tasks swebench:i.jsonl: SWE-bench instances are graded by the swebench package, which "
        "is not installed; install it: pip install 'pytest-agentbench[swebench]'"
    )


def test_a_source_that_is_not_a_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--agent=nop", *DOCKER, "--tasks=swebench:missing.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tasks swebench:missing.jsonl: *missing.jsonl is not a file*"])


def test_a_bad_images_template_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write_instances(pytester.path / "i.jsonl", instance())
    args = ("--agent=nop", *DOCKER, "--tasks=swebench:i.jsonl", "--swebench-images={name}")
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--swebench-images '{name}': KeyError('name') is not a field*"])


def test_items_are_named_by_file_stem_and_instance(pytester: pytest.Pytester) -> None:
    path = pytester.path / "sub" / "verified.jsonl"
    path.parent.mkdir()
    write_instances(path, instance("a__b-1"), "{broken", instance("a__b-2"))
    args = ("--agent=nop", *DOCKER, "--tasks=swebench:sub/verified.jsonl", "--repeats=2")
    result = pytester.runpytest_subprocess(*args, "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "verified/a__b-1::r0",
            "verified/a__b-1::r1",
            "verified/line2::r0",
            "verified/line2::r1",
            "verified/a__b-2::r0",
            "verified/a__b-2::r1",
        ]
    )
    # -k and a pasted id select as they do for directory tasks
    picked = pytester.runpytest_subprocess(*args, "--collect-only", "-q", "-k", "a__b-2")
    picked.stdout.fnmatch_lines(["verified/a__b-2::r0", "verified/a__b-2::r1", "*2/6 tests*"])
    pasted = pytester.runpytest_subprocess(*args, "--collect-only", "-q", "verified/a__b-1::r1")
    pasted.stdout.fnmatch_lines(["verified/a__b-1::r1", "1 test collected*"])
    wrong = pytester.runpytest_subprocess(*args, "verified/a__b-3::r0")
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR
    wrong.stderr.fnmatch_lines(
        ["*verified/a__b-3::r0: the file *verified.jsonl has no task 'a__b-3'*"]
    )


def test_a_bad_line_errors_alone(pytester: pytest.Pytester) -> None:
    write_instances(pytester.path / "i.jsonl", '{"instance_id": "x__y-1"}')
    result = pytester.runpytest_subprocess("--agent=nop", *DOCKER, "--tasks=swebench:i.jsonl")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*i.jsonl:1: field 'repo' is missing*"])


# --- real: the tiny instance in its image, graded by swebench ---------------------------------


def _base_commit() -> str:
    skip_unless_sandbox("docker")
    argv = ["docker", "run", "--rm", IMAGE, "git", "-C", "/testbed", "rev-parse", "HEAD"]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"no image {IMAGE} ({done.stderr.strip()}); run .ci/install-swebench.sh")
    return done.stdout.strip()


def _observations(root: Path) -> dict[str, dict[str, Any]]:
    (run,) = (root / ".agentbench" / "runs").iterdir()
    lines = (run / "observations.jsonl").read_text().splitlines()
    return {o["task"]: o for o in map(json.loads, lines)}


def _swebench_verdict(record: dict[str, Any], log: str, tmp_path: Path) -> bool:
    """What swebench's grading functions say of the log, called here directly."""
    from swebench.harness.constants import FAIL_TO_PASS, PASS_TO_PASS, ResolvedStatus
    from swebench.harness.grading import (
        get_eval_tests_report,
        get_logs_eval,
        get_resolution_status,
    )
    from swebench.harness.test_spec.test_spec import make_test_spec

    official = {k: v for k, v in record.items() if k != "image"}
    spec = make_test_spec(official)
    log_path = tmp_path / f"{record['instance_id']}.log"
    log_path.write_text(log)
    status_map, found = get_logs_eval(spec, str(log_path))
    gold = {FAIL_TO_PASS: spec.FAIL_TO_PASS, PASS_TO_PASS: spec.PASS_TO_PASS}
    report = get_eval_tests_report(status_map, gold)
    return found and get_resolution_status(report) == ResolvedStatus.FULL.value


@pytest.mark.real
def test_oracle_passes_wrong_patch_and_nop_fail_as_swebench_grades_them(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    base = _base_commit()
    gold = instance("pytest-dev__pytest-90001", base_commit=base)
    wrong = instance(
        "pytest-dev__pytest-90002", base_commit=base, patch=(FIXTURE / "wrong.patch").read_text()
    )
    write_instances(pytester.path / "tiny.jsonl", gold, wrong)
    source = "--tasks=swebench:tiny.jsonl"
    result = pytester.runpytest_subprocess("--agent=oracle", *DOCKER, source, "-rA")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines_random(
        ["PASSED tiny/pytest-dev__pytest-90001::r0", "FAILED tiny/pytest-dev__pytest-90002::r0*"]
    )
    seen = _observations(pytester.path)
    (run,) = (pytester.path / ".agentbench" / "runs").iterdir()
    outputs = {}
    for record in (gold, wrong):
        name = str(record["instance_id"])
        outputs[name] = (run / "trials" / f"{name}-r0" / "verifier.txt").read_text()
        log = outputs[name].split("--- test_output.txt ---\n", 1)[1]
        assert seen[name]["final_exact"] == _swebench_verdict(record, log, tmp_path)
    assert outputs["pytest-dev__pytest-90001"].startswith(
        "RESOLVED_FULL\nFAIL_TO_PASS: 1/1 pass\nPASS_TO_PASS: 1/1 pass\n"
    )
    assert outputs["pytest-dev__pytest-90002"].startswith(
        f"RESOLVED_NO\nFAIL_TO_PASS: 1/1 pass\nPASS_TO_PASS: 0/1 pass\n  failed: {P2P}\n"
    )
    nop = pytester.runpytest_subprocess("--agent=nop", *DOCKER, source, "-k", "90001", "-rA")
    nop.assert_outcomes(failed=1)
    nop.stdout.fnmatch_lines(["FAILED tiny/pytest-dev__pytest-90001::r0*"])


@pytest.mark.real
def test_the_agent_sees_the_problem_alone_and_its_change_is_the_diff(
    pytester: pytest.Pytester,
) -> None:
    """A command agent in the image: the repository at base_commit with no patch or test_patch
    in sight; what it writes (a new file too) is its change, and it is graded."""
    base = _base_commit()
    write_instances(pytester.path / "tiny.jsonl", instance(base_commit=base))
    script = (
        f'set -e; test "$(git rev-parse HEAD)" = {base}; test "$PWD" = /testbed; '
        "! grep -rq test_add /testbed /tmp; "
        "printf 'def add(a, b):\\n    return a + b\\n' > fixed.py; "
        "python3 -c \"s = open('calc.py').read(); open('calc.py', 'w').write(s.replace("
        "'def add(a, b):\\n    return a - b', 'from fixed import add'))\""
    )
    args = ("--agent=command", f"--agent-cmd={script}", *DOCKER, "--tasks=swebench:tiny.jsonl")
    result = pytester.runpytest_subprocess(*args, "-rA")
    result.assert_outcomes(passed=1)


@pytest.mark.real
def test_validate_checks_each_instance_in_its_image(tmp_path: Path) -> None:
    base = _base_commit()
    wrong = instance("a__b-2", base_commit=base, patch=(FIXTURE / "wrong.patch").read_text())
    path = write_instances(tmp_path / "tiny.jsonl", instance(base_commit=base), wrong)
    argv = ["agentbench", "validate", f"--tasks=swebench:{path}"]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.stdout.splitlines() == [
        f"a__b-2\t{path}\tthe reference result fails: RESOLVED_NO",
        "# 2 tasks checked, 1 unsound",
    ], done.stderr


@pytest.mark.parametrize("dist", [(), ("-n", "2")], ids=["n0", "n2"])
def test_last_failed_reruns_the_failed_instances_of_a_file_outside_the_rootdir(
    pytester: pytest.Pytester, tmp_path: Path, dist: tuple[str, ...]
) -> None:
    path = write_instances(tmp_path / "outside.jsonl", instance("a__b-1"), "{broken")
    cached = ("-p", "cacheprovider", "--agent=nop", "--sandbox=docker", f"--tasks=swebench:{path}")
    first = pytester.runpytest_subprocess(*cached, "-k", "line2")
    first.assert_outcomes(errors=1)
    again = pytester.runpytest_subprocess(*cached, "--lf", *dist, "-rA")
    again.assert_outcomes(errors=1)
    again.stdout.fnmatch_lines(["ERROR outside/line2::r0*"])
    assert "a__b-1" not in again.stdout.str()


def test_a_repo_and_version_swebench_has_no_command_for_errors_the_trial(tmp_path: Path) -> None:
    from pytest_agentbench.grading.swebench import grade_instance
    from pytest_agentbench.tasks.model import TaskError

    path = write_instances(tmp_path / "i.jsonl", instance(version="0.1"))
    (loaded,) = load_instances(path)
    assert loaded.task is not None
    with pytest.raises(TaskError) as raised:
        grade_instance(None, loaded.task)  # type: ignore[arg-type]  # refused before any container
    assert str(raised.value) == (
        f"{path}:1: swebench knows no test command for repo 'pytest-dev/pytest' version '0.1' "
        "(its MAP_REPO_VERSION_TO_SPECS); fix repo or version"
    )
