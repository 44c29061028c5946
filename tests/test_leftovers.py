"""Whatever an agent leaves is graded, shown escaped, bounded and removed: names that are not
UTF-8, depth past PATH_MAX, modes 000, FIFOs, sockets, symlinks and a 20 GiB sparse file.

Root ignores modes, so the tree checks also run as an ordinary user: as root, in a subprocess
as UNPRIVILEGED_USER; as an ordinary user, the plain case is that run already.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import tempfile
from pathlib import Path

import hostile_tree
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.fs import fdtree, names
from pytest_agentbench.fs.filework import wait_for_file_work
from pytest_agentbench.grading.diffview import render_grade
from pytest_agentbench.grading.grade import compare_tree
from pytest_agentbench.grading.hook import grade_task
from pytest_agentbench.run.store import read_observations
from pytest_agentbench.settings import parse_disk
from pytest_agentbench.tasks.model import MemoryTree, Task
from pytest_agentbench.trial import keep
from pytest_agentbench.trial.artifacts import workspace_diff

UNPRIVILEGED_USER = "nobody"
TESTS = Path(__file__).parent
EXPECTED = MemoryTree({"a.txt": b"2\n", "secret.txt": b"s\n", "gone.txt": b"g\n"})
INPUT = MemoryTree({"a.txt": b"1\n", "secret.txt": b"s\n", "gone.txt": b"g\n"})


@given(st.binary())
def test_any_name_round_trips_through_strict_json(raw: bytes) -> None:
    text = names.encode(raw)
    line = json.dumps({"path": text}, ensure_ascii=False).encode("utf-8")  # UTF-8 can hold it
    assert names.decode(json.loads(line)["path"]) == raw
    assert names.from_os(names.to_os(text)) == text
    shown = names.show(text)
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in shown)


def test_the_encoding_by_example() -> None:
    assert names.encode("é/ü.txt".encode()) == "é/ü.txt"
    assert names.encode(b"a\\b") == "a\\\\b"
    assert names.encode(b"bad\xff") == "bad\\xff"
    assert names.show(names.encode(b"esc\x1b[2J\xc2\x9b")) == "esc\\x1b[2J\\u009b"


@pytest.mark.parametrize("text", ["a\\", "\\x41", "\\q", "\\xFF", "\ud800"])
def test_decode_refuses_text_encode_cannot_make(text: str) -> None:
    with pytest.raises(ValueError):
        names.decode(text)


def check_hostile_tree(root: Path) -> None:
    """The whole story of one hostile workspace: graded, shown, measured, removed."""
    root.mkdir()
    for rel in INPUT.paths():
        (root / rel).write_bytes(INPUT.read(rel))
    hostile_tree.build(str(root), sparse=True)
    (root / "gone.txt").unlink()

    grade = compare_tree(EXPECTED, root)
    assert not grade.exact and not grade.eof_normalized
    assert grade.differing == []  # secret.txt (mode 000) was read and matches
    assert grade.missing == ["gone.txt"]
    assert grade.invalid == hostile_tree.SPECIAL
    odd = sorted(hostile_tree.ODD_NAMES.values())
    assert grade.unexpected == sorted(
        [*odd, "big.txt", hostile_tree.DEEP_FILE, "locked/inside.txt"]
    )
    assert json.loads(json.dumps(grade.unexpected, ensure_ascii=False).encode()) == (
        grade.unexpected
    )

    text = render_grade(grade, EXPECTED, root)
    diff = workspace_diff(INPUT, root)
    for shown in (text, diff):
        assert "\x1b" not in shown and "esc\\x1b[31mred" in shown and "bad\\xff" in shown
    assert "big.txt: (first 256 KiB of 20 GiB shown)" in diff

    assert fdtree.disk_usage([str(root)]) > hostile_tree.SPARSE_SIZE  # at its length

    kept = root.parent / "kept"
    omitted = keep.copy_tree(root, kept)
    assert wait_for_file_work() == []
    assert f"big.txt: {hostile_tree.SPARSE_SIZE} bytes, over the limit of {keep.FILE_LIMIT}" in (
        omitted
    )
    special = [line.split(":")[0] for line in omitted if "not a regular file" in line]
    assert special == ["fifo", "sock"]
    assert any(line.endswith("too long to write") for line in omitted)  # the deep chain
    for raw in hostile_tree.ODD_NAMES:
        with open(os.fsencode(kept) + b"/" + raw, "rb") as handle:
            assert handle.read() == b"odd\n"
    assert os.readlink(kept / "link") == "/etc"
    assert (kept / "locked" / "inside.txt").read_text() == "x\n"
    assert (kept / "secret.txt").read_text() == "s\n"
    assert fdtree.remove_tree(str(kept)) == []

    (root / "big.txt").unlink()  # past the disk limit a trial is never graded (nor copied)
    verifier = root.parent / "verify"
    verifier.write_text('#!/bin/sh\ntest "$(cat a.txt)" = 2 && test ! -e fifo\n')
    verifier.chmod(0o755)
    task = Task(id="v", source="test", make_input=lambda: INPUT, prompt="p", verifier=verifier)
    verified = grade_task(task, root)  # the copy leaves special files out, and says so
    assert verified.verifier_exit_code == 0 and not verified.exact
    assert verified.invalid == hostile_tree.SPECIAL

    assert fdtree.remove_tree(str(root)) == []
    assert not os.path.lexists(root)


def test_a_hostile_tree_is_graded_shown_and_removed(tmp_path: Path) -> None:
    check_hostile_tree(tmp_path / "ws")


def test_the_same_as_an_ordinary_user() -> None:
    """Modes bind only an ordinary user: run the case above as one."""
    if os.getuid() != 0:
        pytest.skip("pytest runs as an ordinary user: the case above was that run")
    try:
        user = pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        pytest.skip(f"no user {UNPRIVILEGED_USER!r} to run as (root ignores modes)")
    home = Path(tempfile.mkdtemp(prefix="agentbench-as-user-"))  # /tmp: the user reaches it
    try:
        os.chown(home, user.pw_uid, user.pw_gid)
        code = (
            f"import sys; sys.path[:0] = [{str(TESTS)!r}]; from pathlib import Path; "
            "import test_leftovers; test_leftovers.check_hostile_tree(Path(sys.argv[1]))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, str(home / "ws")],
            user=user.pw_uid,
            group=user.pw_gid,
            extra_groups=[],
            cwd=home,
            env={"PATH": os.environ["PATH"], "HOME": str(home)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert not (home / "ws").exists()
    finally:
        assert fdtree.remove_tree(str(home)) == []


def test_disk_sizes_parse_or_say_how() -> None:
    assert parse_disk("--sandbox-disk", "1GiB") == parse_disk("--sandbox-disk", "1G") == 1 << 30
    assert parse_disk("--sandbox-disk", "512M") == 512 << 20
    for bad in ("1GB", "lots", "0"):
        with pytest.raises(pytest.UsageError, match=r"--sandbox-disk .*512M, 1G or 2GiB"):
            parse_disk("--sandbox-disk", bad)


AGENT = """
import os, sys
sys.path.insert(0, {tests!r})
import hostile_tree
task = os.environ["AGENTBENCH_TASK"]
if task == "quiet":
    open("a.txt", "w").write("2\\n")
else:
    os.unlink("gone.txt")
    hostile_tree.build(".", sparse=task == "sparse")
"""


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_hostile_agent_ends_in_graded_trials(pytester: pytest.Pytester, monkeypatch, dist):
    """Leftovers and a 20 GiB sparse file are graded failures; the run goes on and leaves
    no trial directory."""
    from conftest import write_task

    tasks = pytester.path / "tasks"
    for task_id in ("hostile", "quiet", "sparse"):
        write_task(
            tasks,
            task_id,
            INPUT.files,
            EXPECTED.files if task_id != "quiet" else {**EXPECTED.files, "gone.txt": b"g\n"},
        )
    agent = pytester.path / "agent.py"
    agent.write_text(AGENT.format(tests=str(TESTS)))
    scratch = pytester.mkdir("scratch")
    monkeypatch.setenv("TMPDIR", str(scratch))
    result = pytester.runpytest_subprocess(
        "-p",
        "no:randomly",
        "--agent=command",
        "--sandbox=tmp",
        "--agent-home=disk",
        f"--agent-cmd={sys.executable} {agent}",
        f"--tasks={tasks}",
        "--agentbench-dir=run",
        *dist,
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.no_re_match_line(".*\x1b.*")
    result.stdout.fnmatch_lines(["*workspace grew past --sandbox-disk 1 GiB: 20.0 GiB*"])
    recorded, notice = read_observations(pytester.path / "run" / "observations.jsonl")
    assert notice is None
    by_task = {o["task"]: o for o in recorded}
    assert {o["status"] for o in recorded} == {"scored"}
    hostile = by_task["hostile"]["rounds"][-1]
    assert hostile["invalid"] == hostile_tree.SPECIAL and "bad\\xff" in hostile["unexpected"]
    assert hostile_tree.DEEP_FILE in hostile["unexpected"] and "over_disk" not in hostile
    sparse = by_task["sparse"]["rounds"][-1]
    assert sparse["over_disk"].startswith("workspace grew past --sandbox-disk 1 GiB: 20")
    assert not by_task["sparse"]["first_exact"] and by_task["quiet"]["first_exact"]
    left = [p for p in scratch.iterdir() if not p.name.startswith("pytest-of-")]
    assert left == [], f"trial directories left behind: {left}"
