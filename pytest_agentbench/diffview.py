"""Short, bounded diffs with invisible characters made visible, for failure reports."""

from __future__ import annotations

import difflib
import unicodedata
from pathlib import Path

from pytest_agentbench.grading import Grade
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
        elif unicodedata.combining(char):
            out.append(f"<U+{ord(char):04X} combining>")
        elif ord(char) > 127 and unicodedata.category(char).startswith(("C", "Z")):
            out.append(f"<U+{ord(char):04X}>")
        else:
            out.append(char)
    return "".join(out)


def _read_limited(data: bytes) -> list[str]:
    return data[:MAX_BYTES].decode("utf-8", "replace").splitlines(keepends=True)


def render_file_diff(rel: str, expected: bytes, actual: bytes) -> list[str]:
    """A unified diff of one file, each line made visible, at most MAX_LINES long."""
    diff = difflib.unified_diff(
        _read_limited(expected),
        _read_limited(actual),
        fromfile=f"expected/{rel}",
        tofile=f"workspace/{rel}",
        n=1,
    )
    lines: list[str] = []
    for raw in diff:
        if raw.startswith(("---", "+++", "@@")):
            lines.append(raw.rstrip("\n"))
        else:
            lines.append(raw[0] + make_visible(raw[1:]))
        if len(lines) >= MAX_LINES:
            lines.append("... (diff cut)")
            break
    if not lines:
        lines.append(f"{rel}: bytes differ outside the first {MAX_BYTES} bytes or only in encoding")
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
            shown = ", ".join(paths[:20]) + (
                f" (+{len(paths) - 20} more)" if len(paths) > 20 else ""
            )
            lines.append(f"{label}: {shown}")
    if grade.verifier_exit_code is not None or grade.verifier_output:
        lines.append(f"verifier exit code: {grade.verifier_exit_code}")
        lines.extend(grade.verifier_output.splitlines()[-MAX_LINES:])
    if expected is not None:
        for rel in grade.differing[:MAX_FILES]:
            actual = (workspace / rel).read_bytes()[:MAX_BYTES]
            lines.extend(render_file_diff(rel, expected.read(rel)[:MAX_BYTES], actual))
    return "\n".join(lines)
