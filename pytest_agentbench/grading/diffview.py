"""Short, bounded diffs with invisible characters made visible, for failure reports.

Nothing here reads more than MAX_BYTES of any file, and every name and line of agent or
verifier output is shown with its control characters escaped (no escape sequence an agent
wrote reaches the terminal).
"""

from __future__ import annotations

import contextlib
import difflib
import os
import unicodedata
from pathlib import Path

from pytest_agentbench.fs import fdtree, names
from pytest_agentbench.fs.sizes import format_size
from pytest_agentbench.grading.grade import Grade
from pytest_agentbench.tasks.model import Tree

MAX_FILES = 3
MAX_LINES = 40
MAX_BYTES = 256 * 1024

_NAMED = {
    "\u200b": "<U+200B ZWSP>",
    "\u2060": "<U+2060 WJ>",
    "\u00a0": "<U+00A0 NBSP>",
    "\u202f": "<U+202F NNBSP>",
    "\u2011": "<U+2011 NB-HYPHEN>",
    "\u2212": "<U+2212 MINUS>",
    "\ufeff": "<U+FEFF BOM>",
    "\u200e": "<U+200E LRM>",
    "\u200f": "<U+200F RLM>",
    "\u00ad": "<U+00AD SHY>",
}


def make_visible(line: str) -> str:
    """Spell out characters a reader cannot see or tell apart."""
    body = line.removesuffix("\n")
    carriage_return = body.endswith("\r")
    body = body.removesuffix("\r")
    text = body if body.isascii() and body.isprintable() else _spell_out(body)
    stripped = text.rstrip("\t ")
    if stripped != text:
        trailing = text[len(stripped) :].replace("\t", "\\t").replace(" ", "·")
        text = stripped + trailing
    if carriage_return:
        text += "\\r"
    if not line.endswith("\n"):
        text += "  <no newline at end>"
    return text


def _spell_out(body: str) -> str:
    """Each character a reader cannot see or tell apart, named (printable ASCII never is)."""
    out: list[str] = []
    for char in body:
        if char in _NAMED:
            out.append(_NAMED[char])
        elif char == "\r":
            out.append("\\r")
        elif (char < " " and char != "\t") or char == "\x7f":  # a terminal would act on it
            out.append(f"<U+{ord(char):04X}>")
        elif unicodedata.combining(char):
            out.append(f"<U+{ord(char):04X} combining>")
        elif ord(char) > 127 and unicodedata.category(char).startswith(("C", "Z")):
            out.append(f"<U+{ord(char):04X}>")
        else:
            out.append(char)
    return "".join(out)


def _read_limited(data: bytes) -> list[str]:
    return data[:MAX_BYTES].decode("utf-8", "replace").splitlines(keepends=True)


def shown_prefix(size: int, limit: int) -> str | None:
    """The note for a file read only in part: (first 256 KiB of 20.0 GiB shown)."""
    if size <= limit:
        return None
    return f"(first {format_size(limit)} of {format_size(size)} shown)"


def tree_prefix(tree: Tree, rel: str, limit: int) -> tuple[bytes, int]:
    """At most limit bytes of a tree's file, and its size; rel is in the tree's own form."""
    source = tree.open_source(rel)
    if source is None:
        data = tree.read(rel)
        return data[:limit], len(data)
    fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return fdtree.read_prefix(fd, limit)
    finally:
        os.close(fd)


def workspace_prefix(workspace: Path, rel: str, limit: int) -> tuple[bytes, int]:
    """At most limit bytes of a workspace file named by its encoded path, and its size
    (opened one component at a time: any depth, no symlink followed)."""
    fd = fdtree.open_beneath(str(workspace), names.decode(rel))
    try:
        return fdtree.read_prefix(fd, limit)
    finally:
        os.close(fd)


def render_file_diff(
    rel: str, expected: bytes, actual: bytes, *, expected_size: int = 0, actual_size: int = 0
) -> list[str]:
    """A unified diff of one file (rel encoded), each line made visible, at most MAX_LINES
    long; the sizes, when larger than what was read, say the diff covers a prefix only."""
    shown = names.show(rel)
    diff = difflib.unified_diff(
        _read_limited(expected),
        _read_limited(actual),
        fromfile=f"expected/{shown}",
        tofile=f"workspace/{shown}",
        n=1,
    )
    lines: list[str] = []
    for side, size, data in (
        ("expected", expected_size, expected),
        ("workspace", actual_size, actual),
    ):
        note = shown_prefix(size, len(data[:MAX_BYTES]))
        if note:
            lines.append(f"{side}/{shown}: {note}")
    for raw in diff:
        if raw.startswith(("---", "+++", "@@")):
            lines.append(raw.rstrip("\n"))
        else:
            lines.append(raw[0] + make_visible(raw[1:]))
        if len(lines) >= MAX_LINES:
            lines.append("... (diff cut)")
            break
    if not any(line.startswith("@@") for line in lines):
        lines.append(
            f"{shown}: bytes differ outside the first {format_size(MAX_BYTES)} or only in encoding"
        )
    return lines


def render_grade(grade: Grade, expected: Tree | None, workspace: Path) -> str:
    """The failure text: which paths differ, then short diffs of the first differing files."""
    lines: list[str] = []
    for label, paths in (
        ("differing", grade.differing),
        ("missing", grade.missing),
        ("unexpected", grade.unexpected),
        ("invalid (symlink or special file)", grade.invalid),
    ):
        if paths:
            shown = ", ".join(names.show(path) for path in paths[:20]) + (
                f" (+{len(paths) - 20} more)" if len(paths) > 20 else ""
            )
            lines.append(f"{label}: {shown}")
    if grade.reward_graded:  # the output's first line says the reward and where it came from
        lines.extend(map(names.show, grade.verifier_output.splitlines()[:1]))
        lines.append(f"verifier exit code: {grade.verifier_exit_code}")
        lines.extend(map(names.show, grade.verifier_output.splitlines()[1:][-MAX_LINES:]))
    elif grade.verifier_exit_code is not None or grade.verifier_output:
        lines.append(f"verifier exit code: {grade.verifier_exit_code}")
        lines.extend(map(names.show, grade.verifier_output.splitlines()[-MAX_LINES:]))
    if expected is not None:
        for rel in grade.differing[:MAX_FILES]:
            with contextlib.suppress(OSError):  # gone or unreadable: the listing says enough
                actual, actual_size = workspace_prefix(workspace, rel, MAX_BYTES)
                before, before_size = tree_prefix(expected, names.to_os(rel), MAX_BYTES)
                lines.extend(
                    render_file_diff(
                        rel, before, actual, expected_size=before_size, actual_size=actual_size
                    )
                )
    return "\n".join(lines)
