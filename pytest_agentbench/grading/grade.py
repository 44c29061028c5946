"""Exact file-tree grading: byte-equal regular files, nothing missing, nothing extra.

The workspace is walked through directory descriptors (fdtree), so any name, depth or mode an
agent left is graded; FIFOs, sockets and devices are invalid entries, never opened. Files are
compared by size first, then in chunks, so memory stays flat however large a file is. Paths in
a Grade are encoded by pytest_agentbench.fs.names.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from pytest_agentbench.fs import fdtree, names
from pytest_agentbench.tasks.model import Tree, file_matches_fd

CHUNK = 1 << 20
_TRAILING_NEWLINES = re.compile(rb"(?:\r?\n)+\Z")
VERIFIER_OUTPUT_LIMIT = 64 * 1024  # kept as the verifier.txt artifact; reports show a tail


@dataclass
class Grade:
    """What the grader found. ``exact`` judges the tree alone; the trial adds execution."""

    exact: bool
    eof_normalized: bool
    differing: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    verifier_exit_code: int | None = None
    verifier_output: str = ""
    # Expected files the workspace holds byte for byte, as the exact comparison found them.
    matched: frozenset[str] = frozenset()
    # A task graded by the reward its verifier writes (Harbor): that reward, None when it
    # wrote none.
    reward: float | None = None
    reward_graded: bool = False


@dataclass
class WorkspaceListing:
    """Every entry of a workspace by its path's bytes, and what the expected files hold."""

    files: set[bytes] = field(default_factory=set)
    dirs: set[bytes] = field(default_factory=set)
    invalid: list[str] = field(default_factory=list)  # encoded names, sorted
    differing: list[str] = field(default_factory=list)  # expected paths (tree form)


def list_workspace(
    root: Path, expected: Tree | None = None, skip: Collection[str] = frozenset()
) -> WorkspaceListing:
    """Every entry under root, never following symlinks (any depth, names, modes); entries
    that are not regular files or directories are invalid and never opened. Files that the
    expected tree also holds (but not those in skip) are compared while their directory is
    open: sizes first, then bytes, streamed."""
    listing = WorkspaceListing()
    if not os.path.lexists(root):  # the agent deleted its own workspace: it holds nothing
        return listing
    wanted = {os.fsencode(rel): rel for rel in expected.paths()} if expected is not None else {}
    for found in fdtree.walk(str(root)):
        if found.kind == fdtree.FILE:
            listing.files.add(found.rel)
            rel = wanted.get(found.rel)
            if (
                expected is not None
                and rel is not None
                and rel not in skip
                and not _matches(expected, rel, found)
            ):
                listing.differing.append(rel)
        elif found.kind == fdtree.DIR:
            listing.dirs.add(found.rel)
        else:
            listing.invalid.append(names.encode(found.rel))
    listing.invalid.sort()
    return listing


def _matches(expected: Tree, rel: str, found: fdtree.Found) -> bool:
    fd = fdtree.open_file(found.dir_fd, found.name)
    try:
        return file_matches_fd(expected, rel, fd)
    finally:
        os.close(fd)


def _parents(path: bytes) -> list[bytes]:
    parts = path.split(b"/")[:-1]
    return [b"/".join(parts[: i + 1]) for i in range(len(parts))]


def _open_expected(expected: Tree, rel: str) -> BinaryIO:
    source = expected.open_source(rel)
    return open(source, "rb") if source is not None else io.BytesIO(expected.read(rel))


def _same_prefix(left: BinaryIO, right: BinaryIO, length: int) -> bool:
    """Whether the next `length` bytes of both streams are equal, read a chunk at a time."""
    while length > 0:
        size = min(CHUNK, length)
        if left.read(size) != right.read(size):
            return False
        length -= size
    return True


def strip_trailing_newlines(data: bytes) -> bytes:
    return _TRAILING_NEWLINES.sub(b"", data)


def trimmed_length(handle: BinaryIO) -> int:
    """The length of the stream's content without its trailing run of LF/CRLF.

    Equal to ``len(strip_trailing_newlines(content))``, but reads backwards from the end only
    as far as the run goes, a chunk at a time, so memory does not grow with the file.
    """
    end = handle.seek(0, os.SEEK_END)
    after = b""  # the first byte after the current block (empty at the end of the stream)
    while end > 0:
        start = max(0, end - CHUNK)
        handle.seek(start)
        block = handle.read(end - start)
        body = len(block.rstrip(b"\r\n"))
        run = block[body:] + after
        # The run ends where a CR is not followed by LF: its last CR-CR pair, or a final CR.
        stop = run.rfind(b"\r\r")
        if not after and run.endswith(b"\r"):
            stop = len(run) - 1
        if stop >= 0:
            return start + body + stop + 1
        if body:
            return start + body
        after, end = block[:1], start
    return 0


def _equal_ignoring_eof(expected: Tree, rel: str, workspace: Path) -> bool:
    """Equal once the trailing runs of LF/CRLF are removed from both sides (streamed)."""
    fd = fdtree.open_beneath(str(workspace), os.fsencode(rel))
    with _open_expected(expected, rel) as left, open(fd, "rb") as right:
        length = trimmed_length(left)
        if trimmed_length(right) != length:
            return False
        left.seek(0)
        right.seek(0)
        return _same_prefix(left, right, length)


def compare_tree(
    expected: Tree, workspace: Path, known_equal: Collection[str] = frozenset()
) -> Grade:
    """Compare the workspace with the expected tree, byte for byte.

    Files in known_equal were already found to hold the tree's bytes and are not read again.
    Paths in the grade are encoded (pytest_agentbench.fs.names); ``matched`` holds the tree's own.
    """
    actual = list_workspace(workspace, expected, known_equal)
    expected_paths = expected.paths()
    expected_files = {os.fsencode(rel) for rel in expected_paths}
    expected_dirs = {os.fsencode(rel) for rel in expected.empty_dirs()}
    for rel in expected_files:
        expected_dirs.update(_parents(rel))
    for rel in list(expected_dirs):
        expected_dirs.update(_parents(rel))

    # A directory is reported only when no file entry beneath it already tells the story.
    missing = [p for p in expected_files if p not in actual.files]
    missing += [d + b"/" for d in map(os.fsencode, expected.empty_dirs()) if d not in actual.dirs]
    unexpected = [p for p in actual.files if p not in expected_files]
    explained = {parent for path in unexpected for parent in _parents(path)}
    unexpected += [d + b"/" for d in actual.dirs if d not in expected_dirs and d not in explained]
    differing = sorted(actual.differing)
    invalid = actual.invalid
    exact = not (missing or unexpected or differing or invalid)
    eof_ok = exact or (
        not (missing or unexpected or invalid)
        and all(_equal_ignoring_eof(expected, rel, workspace) for rel in differing)
    )
    present = [rel for rel in expected_paths if os.fsencode(rel) in actual.files]
    return Grade(
        exact=exact,
        eof_normalized=eof_ok,
        differing=[names.from_os(rel) for rel in differing],
        missing=sorted(map(names.encode, missing)),
        unexpected=sorted(map(names.encode, unexpected)),
        invalid=invalid,
        matched=frozenset(present).difference(differing),
    )


def run_verifier(
    verifier: Path,
    workspace_copy: Path,
    timeout: float,
    command: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
) -> Grade:
    """Run a task's verifier with cwd = a copy of the final workspace; exit 0 means pass.
    COMMAND runs the script when it is not run directly; ENV adds to the inherited variables."""
    try:
        completed = subprocess.run(
            [*command, str(verifier)],
            cwd=workspace_copy,
            env={**os.environ, **env} if env else None,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Grade(exact=False, eof_normalized=False, verifier_output="verifier timed out")
    output = (completed.stdout + completed.stderr)[-VERIFIER_OUTPUT_LIMIT:]
    passed = completed.returncode == 0
    return Grade(
        exact=passed,
        eof_normalized=passed,
        verifier_exit_code=completed.returncode,
        verifier_output=output.decode("utf-8", "replace"),
    )
