"""rerun-bench tasks run as they are: its task.toml, workspace/, hidden verify.py and solution/,
the verifier run the way rerun-bench 0.3.0 runs it, and its own bundled tasks end to end."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.grading.hook import grade_task
from pytest_agentbench.grading.validate import validate
from pytest_agentbench.tasks.formats import FORMAT_NAMES, load_task_dir, split_format
from pytest_agentbench.tasks.model import TaskError, as_mapping, materialize

from conftest import write_tree

PEER_VENV = Path(os.environ.get("AGENTBENCH_PEER_VENV", "/opt/agentbench-peer/rerun-bench-0.3.0"))
ORACLE = ("--agent=oracle", "-p", "no:cacheprovider")
NOP = ("--agent=nop", "-p", "no:cacheprovider")
DISTS = [pytest.param((), id="n0"), pytest.param(("-n", "2"), id="n2")]

# Passes when answer.txt holds 42; checks on the way what rerun-bench's verify() gives it: the
# interpreter, the variables, a cwd that is a copy (not the task's workspace/) and the pristine
# workspace/ beside verify.py.
VERIFY = """\
import os, sys
from pathlib import Path
here = Path(__file__).resolve().parent
assert os.environ["RERUN_BENCH_TASK_DIR"] == str(here), os.environ["RERUN_BENCH_TASK_DIR"]
assert os.environ["PYTHONHASHSEED"] == "0" and os.environ["PYTHONDONTWRITEBYTECODE"] == "1"
assert Path.cwd() != here / "workspace"
assert (here / "workspace" / "answer.txt").read_text() == "?\\n"
if Path("answer.txt").read_text() != "42\\n":
    print("FAIL: answer.txt is not 42")
    sys.exit(1)
print("PASS")
"""


def rerun_task(
    root: Path,
    task_id: str,
    *,
    toml: str | None = None,
    verify: str | None = VERIFY,
    solution: dict[str, str] | None = None,
) -> Path:
    """One rerun-bench task directory (answer.txt: ? -> 42 by default)."""
    task_dir = root / task_id
    write_tree(task_dir / "workspace", {"answer.txt": "?\n"})
    write_tree(task_dir / "solution", solution if solution is not None else {"answer.txt": "42\n"})
    (task_dir / "task.toml").write_text(
        toml
        if toml is not None
        else f'id = "{task_id}"\ntitle = "Answer"\nprompt = "  Write 42 in answer.txt.  "\n'
        'timeout = 90\ntags = ["bugfix", "tiny"]\nverify_timeout = 7\n'
    )
    if verify is not None:
        (task_dir / "verify.py").write_text(verify)  # not executable: an interpreter runs it
    return task_dir


def test_the_fields_map_onto_the_task(tmp_path: Path) -> None:
    task_dir = rerun_task(tmp_path, "answer")
    write_tree(task_dir / "workspace" / "__pycache__", {"m.cpython-311.pyc": b"\0"})
    write_tree(task_dir / "workspace", {"old.pyc": b"\0"})
    task = load_task_dir(task_dir)
    assert (task.id, task.prompt, task.description) == (
        "answer",
        "Write 42 in answer.txt.",
        "Answer",
    )
    assert (task.timeout, task.verify_timeout, task.tags) == (90.0, 7.0, ("bugfix", "tiny"))
    # Only workspace/ reaches the agent, without the caches rerun-bench's copies leave out.
    assert as_mapping(task.input_tree) == {"answer.txt": b"?\n"}
    assert task.meta["format"] == "rerun"


def test_the_verifier_runs_as_rerun_bench_runs_it(tmp_path: Path) -> None:
    task = load_task_dir(rerun_task(tmp_path / "tasks", "answer"))
    for reference, passes in ((False, False), (True, True)):
        workspace = tmp_path / f"ws-{reference}"
        workspace.mkdir()
        materialize(task.input_tree, workspace)
        if reference:
            task.apply_reference(workspace)
        grade = grade_task(task, workspace)
        assert grade.exact is passes, grade.verifier_output
        assert grade.verifier_output.strip() == ("PASS" if passes else "FAIL: answer.txt is not 42")


def hash_of(task_dir: Path) -> str:
    """The fixture hash of a freshly loaded task (fixture_hash is cached per Task)."""
    return load_task_dir(task_dir).content_hash()


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda d: (d / "mutants" / "m1.py").write_text("return 2\n"), id="mutant"),
        pytest.param(lambda d: (d / "mutants" / "m2.py").write_text("x\n"), id="new-mutant"),
        pytest.param(lambda d: (d / "mutants" / "m1.py").unlink(), id="removed-mutant"),
        pytest.param(lambda d: (d / "mutants" / "empty").mkdir(), id="empty-dir"),
        pytest.param(lambda d: (d / "notes.txt").symlink_to("verify.py"), id="symlink"),
        pytest.param(lambda d: (d / "solution" / "answer.txt").write_text("43\n"), id="solution"),
        pytest.param(lambda d: (d / "task.toml").write_text(
            (d / "task.toml").read_text().replace("timeout = 90", "timeout = 91")), id="toml"),
        pytest.param(lambda d: write_tree(d / "workspace" / ".git", {"HEAD": "x"}), id="git"),
    ],
)  # fmt: skip
def test_the_fixture_hash_covers_every_file_the_verifier_may_read(tmp_path: Path, edit) -> None:
    """Several bundled verifiers read mutants/ or the pristine workspace/ beside them: a change
    there changes what a trial measures, so it must not pool with the trials before it."""
    task_dir = rerun_task(tmp_path, "answer")
    write_tree(task_dir / "mutants", {"m1.py": "return 1\n"})
    before = hash_of(task_dir)
    edit(task_dir)
    assert hash_of(task_dir) != before


def test_caches_beside_the_verifier_leave_the_fixture_hash_alone(tmp_path: Path) -> None:
    """Bytecode and tool caches are rebuilt from the sources: they cannot change a verdict."""
    task_dir = rerun_task(tmp_path, "answer")
    write_tree(task_dir / "mutants", {"m1.py": "return 1\n"})
    before = hash_of(task_dir)
    for folder in (task_dir, task_dir / "mutants", task_dir / "workspace"):
        write_tree(folder / "__pycache__", {"verify.cpython-311.pyc": b"\0"})
        write_tree(folder / ".pytest_cache", {"README.md": "cache"})
        write_tree(folder, {"stale.pyc": b"\0", "stale.pyo": b"\0"})
    write_tree(task_dir / ".mypy_cache", {"x": "1"})
    write_tree(task_dir / ".ruff_cache", {"x": "1"})
    assert hash_of(task_dir) == before


@pytest.mark.parametrize(
    ("toml", "verify", "message"),
    [
        (None, None, "verify.py: missing; a rerun-bench task is graded by its verify.py"),
        ('id = "t"\ntitle = "T"\nprompt = "p"\ntimeout = 5\nvrify_timeout = 3\n', VERIFY,
         "task.toml:5: unknown key `vrify_timeout` (did you mean `verify_timeout`?); a rerun-bench "
         "task reads id, prompt, tags, timeout, title, verify_timeout"),
        ('id = "t"\ntitle = "T"\nprompt = "p"\n', VERIFY, "missing required key(s) timeout"),
        ('id = "other"\ntitle = "T"\nprompt = "p"\ntimeout = 5\n', VERIFY,
         "id 'other' must match the directory name 't'"),
    ],
)  # fmt: skip
def test_malformed_tasks_name_the_file_and_fix(
    tmp_path: Path, toml: str | None, verify: str | None, message: str
) -> None:
    task_dir = rerun_task(tmp_path, "t", toml=toml, verify=verify)
    with pytest.raises(TaskError, match="^" + str(task_dir)) as raised:
        load_task_dir(task_dir, "rerun")
    assert message in str(raised.value)


def test_a_rerun_task_without_verify_py_is_told_what_it_lacks(tmp_path: Path) -> None:
    """Without its verifier file nothing marks the format: the keys do, in the message."""
    task_dir = rerun_task(tmp_path, "t", verify=None)
    with pytest.raises(TaskError, match=r"verify.py: missing; the keys of .* look like a rerun"):
        load_task_dir(task_dir)


@given(name=st.sampled_from(FORMAT_NAMES), rest=st.text())
def test_a_format_prefix_splits_off_whatever_follows(name: str, rest: str) -> None:
    assert split_format(f"{name}:{rest}") == (name, rest)


@given(path=st.text().map(lambda tail: "./" + tail) | st.text().map(lambda tail: "/" + tail))
def test_a_path_written_dot_slash_or_absolute_is_never_a_format(path: str) -> None:
    assert split_format(path) == (None, path)


def test_builtin_is_not_a_format() -> None:
    assert split_format("builtin:tasks") == (None, "builtin:tasks")


@pytest.mark.parametrize("dist", DISTS)
def test_malformed_tasks_error_alone_and_count_as_declared(pytester, dist) -> None:
    root = pytester.path / "suite"
    rerun_task(root, "good")
    rerun_task(root, "no-verifier", verify=None)
    rerun_task(root, "typo", toml='id = "typo"\ntitle = "T"\nprompt = "p"\ntimeout = 5\nx = 1\n')
    result = pytester.runpytest_subprocess(*ORACLE, f"--tasks=rerun:{root}", *dist)
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines_random(  # under xdist the two errors come in either order
        [
            f"*{root / 'no-verifier' / 'verify.py'}: missing*",
            f"*{root / 'typo' / 'task.toml'}:5: unknown key `x`; a rerun-bench task reads*",
            "*coverage 33.3% (1 of 3 declared tasks)*",
        ]
    )


def test_tags_become_markers_and_a_colon_path_is_written_dot_slash(pytester) -> None:
    root = pytester.path / "odd:name"
    rerun_task(root, "tagged")
    toml = 'id = "plain"\ntitle = "T"\nprompt = "p"\ntimeout = 5\ntags = ["other"]\n'
    rerun_task(root, "plain", toml=toml)
    result = pytester.runpytest_subprocess(*ORACLE, "--tasks=./odd:name", "-m", "tiny")
    result.assert_outcomes(passed=1, deselected=1)
    unknown = pytester.runpytest_subprocess(*ORACLE, "--tasks=odd:name")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    unknown.stderr.fnmatch_lines(["*unknown task format 'odd'*written ./PATH*"])


def test_validate_checks_pristine_fails_and_solution_passes(tmp_path: Path) -> None:
    rerun_task(tmp_path, "sound")
    rerun_task(tmp_path, "wrong-solution", solution={"answer.txt": "41\n"})
    verdicts = {v.task_id: v.problems for v in validate((f"rerun:{tmp_path}",), tmp_path)}
    assert verdicts["sound"] == []
    assert verdicts["wrong-solution"] == ["the reference result fails: verifier exit 1"]


def peer_tasks_dir() -> Path:
    """The bundled task suite of the pinned peer (.ci/install-peer.sh installs it)."""
    python = PEER_VENV / "bin" / "python"
    if not python.exists():
        pytest.skip(f"rerun-bench 0.3.0 is not installed in {PEER_VENV} (.ci/install-peer.sh)")
    code = "from rerun_bench.tasks import default_tasks_dir as d, discover; import json; " \
        "print(json.dumps([str(d()), [t.id for t in discover()]]))"  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "RERUN_BENCH_TASKS_DIR"}
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, check=True)
    where, ids = json.loads(out.stdout)
    assert len(ids) == 10, ids
    return Path(where)


@pytest.mark.real
@pytest.mark.parametrize("dist", DISTS)
def test_the_peers_bundled_tasks_pass_with_the_oracle(pytester, dist) -> None:
    tasks = peer_tasks_dir()
    pytester.runpytest_subprocess(*ORACLE, f"--tasks={tasks}", *dist).assert_outcomes(passed=10)


@pytest.mark.real
def test_the_peers_bundled_tasks_fail_with_nop(pytester) -> None:
    tasks = peer_tasks_dir()
    result = pytester.runpytest_subprocess(*NOP, f"--tasks=rerun:{tasks}")
    result.assert_outcomes(failed=10)
    result.stdout.fnmatch_lines(["*verifier exit code: 1*"])


def test_an_ini_source_keeps_its_format_prefix(pytester) -> None:
    """The path after FORMAT: is relative to the ini file, as every ini task path is."""
    rerun_task(pytester.path / "conf" / "suite", "good")
    (pytester.path / "conf" / "pytest.ini").write_text("[pytest]\nagentbench_tasks = rerun:suite\n")
    result = pytester.runpytest_subprocess(
        *ORACLE, "-c", str(pytester.path / "conf" / "pytest.ini")
    )
    result.assert_outcomes(passed=1)


def test_the_verifier_output_goes_to_the_artifacts_and_its_tail_to_the_report(pytester) -> None:
    noisy = "import sys\nfor i in range(200):\n    print(f'check {i:03d} failed')\nsys.exit(1)\n"
    rerun_task(pytester.path / "suite", "noisy", verify=noisy)
    result = pytester.runpytest_subprocess(*NOP, f"--tasks={pytester.path / 'suite'}", "--tb=short")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*verifier exit code: 1", "check 160 failed", "check 199 failed"])
    result.stdout.no_fnmatch_line("check 159 failed")
    (artifact,) = (pytester.path / ".agentbench" / "runs").glob("*/trials/noisy-r0/verifier.txt")
    lines = artifact.read_text().splitlines()
    assert lines == [f"check {i:03d} failed" for i in range(200)]


@pytest.mark.parametrize(("task_format", "outcome"), [("rerun", "passed"), ("directory", "failed")])
def test_the_verifier_alone_decides_a_rerun_task(pytester, task_format: str, outcome: str) -> None:
    """rerun-bench scores the verifier's verdict and records the agent's exit status; a
    directory task still asks the agent to exit cleanly as well."""
    suite = pytester.path / "suite"
    if task_format == "rerun":
        rerun_task(suite, "answer")
    else:
        write_tree(suite / "answer", {"task.toml": 'prompt = "Write 42 in answer.txt."\n'})
        write_tree(suite / "answer" / "input", {"answer.txt": "?\n"})
        write_tree(suite / "answer" / "expected", {"answer.txt": "42\n"})
    result = pytester.runpytest_subprocess(
        "--agent=command",
        "--agent-cmd=printf '42\\n' > answer.txt; exit 3",
        "--sandbox=tmp",
        f"--tasks={suite}",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(**{outcome: 1})
    (observations,) = (pytester.path / ".agentbench" / "runs").glob("*/observations.jsonl")
    (observation,) = [json.loads(line) for line in observations.read_text().splitlines()]
    assert [r["exit_code"] for r in observation["rounds"]] == [3]
    assert observation["first_exact"] is (outcome == "passed")
