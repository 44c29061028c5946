"""The fast paths that keep the harness cheap per trial behave exactly like the slow ones."""

from __future__ import annotations

import gc
import io
import json
import os
import select
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.fs.filework import remove_later, wait_for_file_work, write_later
from pytest_agentbench.grading import grade as grading
from pytest_agentbench.grading.grade import compare_tree, strip_trailing_newlines, trimmed_length
from pytest_agentbench.sandbox.base import run_process_group
from pytest_agentbench.sandbox.ownership import OWNER_PREFIX
from pytest_agentbench.scoring.document import write_report
from pytest_agentbench.tasks.model import DirTree, MemoryTree, replace_with

ENV = {"PATH": os.environ["PATH"]}


@given(st.lists(st.sampled_from([b"a", b"\r", b"\n"]), max_size=24), st.integers(1, 5))
def test_trimmed_length_matches_the_regex_across_chunk_borders(parts, chunk):
    data = b"".join(parts)
    original = grading.CHUNK
    grading.CHUNK = chunk
    try:
        assert trimmed_length(io.BytesIO(data)) == len(strip_trailing_newlines(data))
    finally:
        grading.CHUNK = original


def test_eof_normalized_comparison_streams_large_files(tmp_path, monkeypatch):
    monkeypatch.setattr(grading, "CHUNK", 4096)
    body = b"line\r\n" * 50_000
    (tmp_path / "expected").mkdir()
    (tmp_path / "expected" / "big.txt").write_bytes(body)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "big.txt").write_bytes(body + b"\r\n\n")
    grade = compare_tree(DirTree(tmp_path / "expected"), tmp_path / "ws")
    assert (grade.exact, grade.eof_normalized, grade.differing) == (False, True, ["big.txt"])
    (tmp_path / "ws" / "big.txt").write_bytes(body[:-3] + b"X\r\n")
    grade = compare_tree(DirTree(tmp_path / "expected"), tmp_path / "ws")
    assert (grade.exact, grade.eof_normalized) == (False, False)


def test_memory_tree_sizes_come_from_the_bytes(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"abc")
    assert compare_tree(MemoryTree({"a.txt": b"abc"}), tmp_path).exact
    assert not compare_tree(MemoryTree({"a.txt": b"abcd"}), tmp_path).exact


def test_process_output_tails_and_exit_code(tmp_path):
    result = run_process_group(
        ["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], env=ENV, cwd=str(tmp_path), timeout=10
    )
    assert (result.exit_code, result.timed_out) == (3, False)
    assert (result.stdout, result.stderr) == (b"out\n", b"err\n")


def test_process_deadline_kills_the_group(tmp_path):
    start = time.monotonic()
    result = run_process_group(
        ["/bin/sh", "-c", "sleep 30 & sleep 30"], env=ENV, cwd=str(tmp_path), timeout=0.5
    )
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - start < 10


def test_process_exit_is_seen_while_a_descendant_holds_the_pipes(tmp_path):
    """The leader exits; a background child keeps stdout open; the group is killed anyway."""
    start = time.monotonic()
    result = run_process_group(
        ["/bin/sh", "-c", "sleep 30 & echo started"], env=ENV, cwd=str(tmp_path), timeout=20
    )
    assert (result.exit_code, result.stdout) == (0, b"started\n")
    assert time.monotonic() - start < 10


def test_replace_with_makes_the_workspace_exactly_the_tree(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    ws = tmp_path / "ws"
    (ws / "src" / "old").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("old")
    (ws / "src" / "old" / "x").write_text("x")
    (ws / "stray").mkdir()
    (ws / "link.txt").symlink_to(outside)
    tree = MemoryTree({"src/a.py": b"new", "link.txt": b"data"}, dirs=frozenset({"empty"}))
    replace_with(tree, ws)
    assert compare_tree(tree, ws).exact
    assert outside.read_text() == "keep me"  # the symlink was replaced, not written through


def test_replace_with_keeps_equal_files_and_never_writes_through(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "same.txt").write_bytes(b"same")
    (ws / "edit.txt").write_bytes(b"before")
    (ws / "longer.txt").write_bytes(b"same prefix")
    hard = tmp_path / "hardlinked-elsewhere"
    hard.write_bytes(b"before")
    os.link(hard, ws / "shared.txt")
    os.utime(ws / "same.txt", (1_000_000, 1_000_000))
    tree = MemoryTree(
        {"same.txt": b"same", "edit.txt": b"after", "longer.txt": b"same", "shared.txt": b"x"}
    )
    replace_with(tree, ws)
    assert compare_tree(tree, ws).exact
    assert (ws / "same.txt").stat().st_mtime == 1_000_000  # equal: left alone
    assert hard.read_bytes() == b"before"  # the other name of a hard link is untouched


def test_removed_later_is_gone_after_waiting(tmp_path):
    victims = [tmp_path / f"trial-{n}" for n in range(200)]  # more than the pipe holds
    for victim in victims:
        (victim / "a" / "b").mkdir(parents=True)
        (victim / "a" / "file").write_text("x")
    for victim in victims:
        remove_later(victim)
    wait_for_file_work()
    assert not any(victim.exists() for victim in victims)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.binary(max_size=20_000), min_size=1, max_size=8))
def test_written_later_holds_the_bytes_after_waiting(tmp_path_factory, contents):
    root = tmp_path_factory.mktemp("artifacts")
    targets = [root / f"trial-{n}" / "out.bin" for n in range(len(contents))]
    for target, data in zip(targets, contents, strict=True):
        write_later(target, data)
    wait_for_file_work()
    assert [target.read_bytes() for target in targets] == contents


def test_a_write_the_helper_cannot_make_is_reported_naming_the_file(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    write_later(blocker / "diff.patch", b"lost")
    write_later(tmp_path / "ok" / "diff.patch", b"kept")
    failures = wait_for_file_work()
    assert len(failures) == 1 and failures[0].startswith(f"could not write {blocker}/diff.patch")
    assert (tmp_path / "ok" / "diff.patch").read_bytes() == b"kept"
    assert wait_for_file_work() == []  # each failure is told once


def test_a_killed_helper_is_replaced_by_writing_in_place(tmp_path):
    from pytest_agentbench.fs import filework

    write_later(tmp_path / "a" / "first.txt", b"1")
    helper = filework._worker.process
    assert helper is not None
    helper.kill()
    helper.wait()
    write_later(tmp_path / "b" / "second.txt", b"2")  # the pipe is broken: written here
    assert (tmp_path / "b" / "second.txt").read_bytes() == b"2"
    write_later(tmp_path / "b" / "second.txt" / "x", b"3")  # cannot be written, in place too
    [failure] = wait_for_file_work()
    assert failure.startswith(f"could not write {tmp_path}/b/second.txt/x: ")


def test_a_killed_removal_helper_is_replaced_by_removing_in_place(tmp_path):
    from pytest_agentbench.fs import filework

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    remove_later(first)
    helper = filework._worker.process
    assert helper is not None
    helper.kill()
    helper.wait()
    remove_later(second)  # the write fails: removed here instead
    wait_for_file_work()
    assert not second.exists()
    remove_later(first)  # and the next removal starts a new helper
    wait_for_file_work()
    assert not first.exists()


def test_a_forked_child_does_not_keep_the_parents_helper_waiting(tmp_path):
    from pytest_agentbench.fs import filework

    victim = tmp_path / "trial"
    victim.mkdir()
    remove_later(victim)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child waits for the parent, 15 s at most
        os.close(write_end)
        select.select([read_end], [], [], 15)
        os._exit(0)
    os.close(read_end)
    try:
        started = time.monotonic()
        filework.stop_file_work()  # the helper sees EOF although the child still runs
        assert time.monotonic() - started < 10
        assert not victim.exists()
    finally:
        os.close(write_end)
        os.waitpid(child, 0)


def test_streamed_report_is_the_same_json(tmp_path):
    report = {
        "schema_version": 1,
        "run": {"agent": "mock", "nested": {"é": "line\nbreak"}},
        "tasks": [{"id": "t", "first_exact": None}],
        "observations": [],
        "summary": {"ci": [0.1, 0.9]},
    }
    path = tmp_path / "out" / "r.json"
    write_report(report, path)
    assert json.loads(path.read_text(encoding="utf-8")) == report


@pytest.mark.parametrize("count", [0, 1, 3])
def test_streamed_report_lists(tmp_path, count):
    report = {"observations": [{"task": f"t{i}", "repeat": i} for i in range(count)]}
    write_report(report, tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text()) == report


def test_staged_etc_holds_what_the_binds_showed(tmp_path) -> None:
    """One bind of the copy instead of one per entry: the same entries, symlinks as a bind
    shows them (the entry resolved, links inside directories kept)."""
    from pytest_agentbench.sandbox.bwrap import ETC_ENTRIES, stage_etc

    stage_etc(tmp_path)
    for name in ETC_ENTRIES:
        source, copy = Path("/etc", name), tmp_path / name
        if source.is_file() and os.access(source, os.R_OK):
            assert copy.read_bytes() == source.read_bytes(), name
            assert not copy.is_symlink()
        elif source.is_dir():
            inside = sorted(p.name for p in source.iterdir())
            assert sorted(p.name for p in copy.iterdir()) == inside, name
            for entry in source.iterdir():
                assert (copy / entry.name).is_symlink() == entry.is_symlink()
        else:
            assert not copy.exists()
    assert not (tmp_path / "shadow").exists()


SHELL_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"))


@settings(max_examples=30, deadline=None)
@given(st.lists(SHELL_TEXT, max_size=4), SHELL_TEXT)
def test_docker_round_script_keeps_argv_env_and_cwd(args: list[str], value: str) -> None:
    """The round's argv and environment reach the process exactly, whatever they hold."""
    import subprocess
    import tempfile

    from pytest_agentbench.sandbox.docker import round_script

    with tempfile.TemporaryDirectory() as cwd:
        argv = [
            "python3",
            "-c",
            "import json,os,sys; print(json.dumps([sys.argv[1:], "
            "os.environ['AGENTBENCH_X'], os.getcwd()]))",
            *args,
        ]
        script = round_script(argv, {"AGENTBENCH_X": value}, cwd)
        done = subprocess.run(["/bin/sh", "-c", script], capture_output=True, check=True, env=ENV)
        assert json.loads(done.stdout) == [args, value, os.path.realpath(cwd)]


def test_objects_alive_after_collection_are_frozen_for_the_run_only(pytester) -> None:
    """pytest's closing garbage collections skip what lived through collection (the tasks,
    items and modules), and the process gets its collector back when the run ends: the
    garbage made after it is collected."""
    from conftest import simple_tasks

    pytester.makeconftest(
        "import gc\n"
        "def record(label):\n"
        "    with open('frozen.txt', 'a') as out:\n"
        "        print(label, gc.get_freeze_count(), file=out)\n"
        "record('start')\n"
        "def pytest_runtest_call(item):\n"
        "    record('trial')\n"
    )
    tasks = simple_tasks(pytester.path / "tasks", 2)
    result = pytester.runpytest_inprocess("--agent=oracle", f"--tasks={tasks}")
    result.assert_outcomes(passed=2)
    counts = [line.split() for line in (pytester.path / "frozen.txt").read_text().splitlines()]
    assert [label for label, _ in counts] == ["start", "trial", "trial"]
    assert all(int(count) > 1000 for label, count in counts if label == "trial")
    assert gc.get_freeze_count() == 0


def test_the_interpreter_exit_collects_the_garbage_then_skips_the_living(pytester) -> None:
    """At exit the garbage left is collected once (its finalizers run, a file it holds is
    written), then the living are frozen so the interpreter's shutdown does not walk them."""
    from conftest import simple_tasks

    pytester.makeconftest(
        "import atexit, gc\n"
        "class Cycle:\n"
        "    def __del__(self):\n"
        "        self.out.write('finalized')\n"
        "        self.out.close()\n"
        "def at_exit():\n"  # registered first: runs after the plugin's handler
        "    with open('exit.txt', 'w') as out:\n"
        "        print(gc.get_freeze_count(), file=out)\n"
        "atexit.register(at_exit)\n"
        "@__import__('pytest').hookimpl(trylast=True)\n"
        "def pytest_unconfigure(config):\n"
        "    gc.disable()\n"  # only a full collection finds it now
        "    cycle = Cycle()\n"
        "    cycle.me, cycle.out = cycle, open('garbage.txt', 'w')\n"
    )
    tasks = simple_tasks(pytester.path / "tasks", 2)
    result = pytester.runpytest_subprocess("--agent=oracle", f"--tasks={tasks}")
    result.assert_outcomes(passed=2)
    assert (pytester.path / "garbage.txt").read_text() == "finalized"
    assert int((pytester.path / "exit.txt").read_text()) > 1000


def test_tables_align_columns_under_a_rule() -> None:
    from pytest_agentbench.report.table import format_table

    lines = format_table(["id", "rate"], [["t1", "5.0%"], ["task-22", "100.0%"]], right={1})
    assert lines == [
        "id         rate",
        "-------  ------",
        "t1         5.0%",
        "task-22  100.0%",
    ]
    # cells are shown as the caller formatted them: a number-like text is not re-read
    assert format_table(["x", "y"], [["0.50", "1e3"]])[2] == "0.50  1e3"
    assert format_table(["task", "flip"], []) == ["task    flip", "------  ------"]


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_tabulate_is_loaded_for_the_summary_not_for_trials(pytester, dist) -> None:
    """Drawing tables stays off the trial path: no trial imports tabulate. A worker never has
    it; the controller has it for the summary, imported by its own thread while trials run
    (the only process of a serial run too) or by the summary itself."""
    from conftest import simple_tasks

    pytester.makeconftest(
        "import sys, threading\n"
        "ended = []\n"
        "def record(*words):\n"
        "    with open('loaded.txt', 'a') as out:\n"
        "        print(*words, file=out)\n"
        "class Watch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'tabulate':\n"
        "            record('import', threading.current_thread().name, len(ended))\n"
        "sys.meta_path.insert(0, Watch())\n"
        "def pytest_runtest_teardown(item):\n"
        "    ended.append(item)\n"
        "    if hasattr(item.config, 'workerinput'):\n"
        "        record('worker trial', 'tabulate' in sys.modules)\n"
        "def pytest_unconfigure(config):\n"
        "    if not hasattr(config, 'workerinput'):\n"
        "        record('end', 'tabulate' in sys.modules)\n"
    )
    tasks = simple_tasks(pytester.path / "tasks", 3)
    result = pytester.runpytest_subprocess("--agent=oracle", f"--tasks={tasks}", *dist)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["task*outcomes*first*final*flip", "----*"])
    lines = (pytester.path / "loaded.txt").read_text().splitlines()
    assert lines[-1] == "end True"
    imports = [line.split() for line in lines if line.startswith("import ")]
    assert len(imports) == 1, lines  # once, by the controller
    _, thread, trials_ended = imports[0]
    assert thread == "agentbench-import" or (thread == "MainThread" and trials_ended == "3")
    workers = [line for line in lines if line.startswith("worker trial")]
    assert workers == (["worker trial False"] * 3 if dist else []), lines


def test_the_summary_imports_no_numpy_after_the_last_trial(pytester) -> None:
    """What the report needs of numpy, its lazily loaded parts included (the bootstrap's
    random generator, np.percentile's masked arrays), is imported while the trials run, not
    by the summary on pytest's thread once they have ended."""
    from conftest import simple_tasks

    pytester.makeconftest(
        "import sys, threading\n"
        "late = []\n"
        "def record(*words):\n"
        "    with open('late.txt', 'a') as out:\n"
        "        print(*words, file=out)\n"
        "class Watch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if late and threading.current_thread() is threading.main_thread():\n"
        "            record(name)\n"
        "sys.meta_path.insert(0, Watch())\n"
        "def pytest_runtest_call(item):\n"  # the summary's imports have had their time
        "    for thread in threading.enumerate():\n"
        "        if thread.name == 'agentbench-import':\n"
        "            thread.join()\n"
        "def pytest_runtest_teardown(item, nextitem):\n"
        "    if nextitem is None:\n"
        "        late.append(item)\n"
        "        record('last trial ended')\n"
    )
    tasks = simple_tasks(pytester.path / "tasks", 2)
    result = pytester.runpytest_subprocess("--agent=oracle", f"--tasks={tasks}")
    result.assert_outcomes(passed=2)
    lines = (pytester.path / "late.txt").read_text().splitlines()
    assert lines[0] == "last trial ended"
    assert [name for name in lines[1:] if name.split(".")[0] in ("numpy", "tabulate")] == []


def test_memory_dir_needs_the_room_asked_for() -> None:
    from pytest_agentbench.sandbox.base import memory_dir

    assert memory_dir(1 << 62) is None  # more than any machine has
    assert memory_dir() in ("/dev/shm", None)


@pytest.mark.parametrize(
    ("agent", "agent_home"), [("mock", "auto"), ("mock", "disk"), ("command", "auto")]
)
def test_trials_of_agents_without_processes_live_in_memory(pytester, agent, agent_home) -> None:
    """mock and oracle trials hold only the task's trees: they go where homes go (memory when
    there is room); an agent that starts processes keeps its workspace on disk."""
    from pytest_agentbench.sandbox import home_parent

    from conftest import simple_tasks

    pytester.makeconftest(
        "def pytest_runtest_call(item):\n"
        "    with open('workspaces.txt', 'a') as out:\n"
        "        print(item.funcargs['agentbench_sandbox'].workspace, file=out)\n"
    )
    tasks = simple_tasks(pytester.path / "tasks", 2)
    result = pytester.runpytest_subprocess(
        f"--agent={agent}",
        "--agent-cmd=true",
        "--sandbox=tmp",
        f"--agent-home={agent_home}",
        f"--tasks={tasks}",
        "--agentbench-dir=run",
    )
    assert result.ret in (0, 1)
    memory = home_parent(agent_home) if agent == "mock" else None
    expected_parent = Path(memory) if memory else Path(tempfile.gettempdir())
    seen = [Path(line) for line in (pytester.path / "workspaces.txt").read_text().split()]
    assert len(seen) == 2
    owners = [w.parent.parent for w in seen]  # workspace < trial directory < owner directory
    assert all(o.parent == expected_parent and o.name.startswith(OWNER_PREFIX) for o in owners)
    assert not any(w.exists() for w in seen)
    sandbox = json.loads((pytester.path / "run" / "run.json").read_text())["sandbox"]
    assert sandbox["trial_directories"] == (memory or "temp directory")
