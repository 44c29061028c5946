"""The exact-tree grader and the EOF-normalized diagnostic."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pytest_agentbench.grading.diffview import make_visible, render_grade
from pytest_agentbench.grading.grade import compare_tree, strip_trailing_newlines
from pytest_agentbench.tasks.model import DirTree, MemoryTree, Task, materialize
from pytest_agentbench.trial.artifacts import workspace_diff

names = st.sampled_from(["a.txt", "b.py", "d/c.md", "d/e/f.txt", "g"])
trees = st.dictionaries(names, st.binary(max_size=64), max_size=5)


def _fresh(tmp_path: Path, label: str) -> Path:
    path = tmp_path / label
    path.mkdir()
    return path


def _conflict_free(files: dict[str, bytes]) -> dict[str, bytes]:
    """Drop paths that would need to be both a file and a directory."""
    dirs = {"/".join(p.split("/")[: i + 1]) for p in files for i in range(p.count("/"))}
    return {p: d for p, d in files.items() if p not in dirs}


@settings(max_examples=60, deadline=None)
@given(expected=trees, actual=trees)
def test_exact_iff_trees_equal(tmp_path_factory, expected, actual) -> None:
    expected, actual = _conflict_free(expected), _conflict_free(actual)
    workspace = tmp_path_factory.mktemp("ws")
    materialize(MemoryTree(actual), workspace)
    grade = compare_tree(MemoryTree(expected), workspace)
    assert grade.exact == (expected == actual)
    assert grade.eof_normalized or not grade.exact
    assert grade.matched == {p for p, data in expected.items() if actual.get(p) == data}
    assert set(grade.missing) == {p for p in expected if p not in actual}
    assert set(grade.unexpected) == {p for p in actual if p not in expected} | {
        d + "/"
        for d in {"/".join(p.split("/")[:-1]) for p in actual if "/" in p}
        if not any(e.startswith(d + "/") for e in expected)
        and not any(a.startswith(d + "/") and a not in expected for a in actual)
    }


@settings(max_examples=60, deadline=None)
@given(
    body=st.binary(max_size=40),
    left=st.lists(st.sampled_from([b"\n", b"\r\n"]), max_size=3),
    right=st.lists(st.sampled_from([b"\n", b"\r\n"]), max_size=3),
)
def test_eof_normalized_forgives_only_trailing_newline_runs(tmp_path_factory, body, left, right):
    body = strip_trailing_newlines(body)
    assume(not body.endswith(b"\r"))  # a final CR would pair with an added LF into CRLF
    workspace = tmp_path_factory.mktemp("ws")
    (workspace / "f.txt").write_bytes(body + b"".join(right))
    grade = compare_tree(MemoryTree({"f.txt": body + b"".join(left)}), workspace)
    assert grade.eof_normalized
    assert grade.exact == (left == right)


def test_eof_normalized_does_not_forgive_content_or_missing_files(tmp_path: Path) -> None:
    workspace = _fresh(tmp_path, "ws")
    (workspace / "f.txt").write_bytes(b"one\ntwo\n")
    grade = compare_tree(MemoryTree({"f.txt": b"one\nTWO\n"}), workspace)
    assert not grade.exact and not grade.eof_normalized
    grade = compare_tree(MemoryTree({"f.txt": b"one\ntwo", "g.txt": b"x"}), workspace)
    assert grade.missing == ["g.txt"] and not grade.eof_normalized


def test_symlinks_special_files_and_empty_dirs_fail(tmp_path: Path) -> None:
    workspace = _fresh(tmp_path, "ws")
    (workspace / "f.txt").write_bytes(b"x")
    (workspace / "empty").mkdir()
    os.symlink("f.txt", workspace / "link")
    os.mkfifo(workspace / "pipe")
    grade = compare_tree(MemoryTree({"f.txt": b"x"}), workspace)
    assert not grade.exact and not grade.eof_normalized
    assert grade.invalid == ["link", "pipe"]
    assert grade.unexpected == ["empty/"]


def test_a_symlink_to_the_right_content_is_not_followed(tmp_path: Path) -> None:
    workspace = _fresh(tmp_path, "ws")
    (tmp_path / "outside.txt").write_bytes(b"x")
    os.symlink(tmp_path / "outside.txt", workspace / "f.txt")
    grade = compare_tree(MemoryTree({"f.txt": b"x"}), workspace)
    assert grade.missing == ["f.txt"] and grade.invalid == ["f.txt"]


def test_modes_and_mtimes_are_ignored(tmp_path: Path) -> None:
    expected_dir, workspace = _fresh(tmp_path, "exp"), _fresh(tmp_path, "ws")
    (expected_dir / "run.sh").write_bytes(b"#!/bin/sh\n")
    (workspace / "run.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(workspace / "run.sh", 0o755)
    os.utime(workspace / "run.sh", (0, 0))
    assert compare_tree(DirTree(expected_dir), workspace).exact


def test_large_file_differing_in_last_byte(tmp_path: Path) -> None:
    expected_dir, workspace = _fresh(tmp_path, "exp"), _fresh(tmp_path, "ws")
    data = b"a" * (3 * (1 << 20) + 5)
    (expected_dir / "big").write_bytes(data)
    (workspace / "big").write_bytes(data[:-1] + b"b")
    grade = compare_tree(DirTree(expected_dir), workspace)
    assert grade.differing == ["big"]
    memory = compare_tree(MemoryTree({"big": data}), workspace)
    assert memory.differing == ["big"]


def test_render_makes_invisible_characters_visible(tmp_path: Path) -> None:
    workspace = _fresh(tmp_path, "ws")
    (workspace / "f.txt").write_text("a\u00a0b\u200bc\t\r\ne\u0301\n", encoding="utf-8")
    expected = MemoryTree({"f.txt": "a b c\r\n\u00e9\n".encode()})
    text = render_grade(compare_tree(expected, workspace), expected, workspace)
    assert "differing: f.txt" in text
    for marker in ("<U+00A0 NBSP>", "<U+200B ZWSP>", "\\t", "\\r", "<U+0301 combining>"):
        assert marker in text
    assert make_visible("x") == "x  <no newline at end>"


@given(st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_printable_ascii_needs_no_spelling_out(text: str) -> None:
    """make_visible skips the per-character pass for printable ASCII: it would change nothing."""
    from pytest_agentbench.grading.diffview import _spell_out

    if text.isascii() and text.isprintable():
        assert _spell_out(text) == text
    ascii_text = "".join(c for c in text if " " <= c <= "~")
    assert _spell_out(ascii_text) == ascii_text


@settings(max_examples=60, deadline=None)
@given(source=trees, expected=trees, actual=trees)
def test_the_final_diff_skips_only_files_it_knows(tmp_path_factory, source, expected, actual):
    """Sparing the reread of files equal in input, expected and workspace changes no diff; the
    unchanged paths are the same whether hashing or the trees themselves found them."""
    source, expected, actual = map(_conflict_free, (source, expected, actual))
    root = tmp_path_factory.mktemp("task")
    for label, files in (("workspace", actual), ("in", source), ("out", expected)):
        materialize(MemoryTree(files), _fresh(root, label))
    task, hashed = (
        Task(
            id="t",
            source="",
            make_input=lambda: DirTree(root / "in"),
            prompt="",
            make_expected=lambda: DirTree(root / "out"),
        )
        for _ in range(2)
    )
    hashed.content_hash()
    same = {p for p, data in source.items() if expected.get(p) == data}
    assert task.unchanged_paths == hashed.unchanged_paths == same
    known = task.unchanged_paths & compare_tree(task.expected_tree, root / "workspace").matched
    full = workspace_diff(task.input_tree, root / "workspace")
    assert workspace_diff(task.input_tree, root / "workspace", known) == full
