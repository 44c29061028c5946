"""Code measures of one change (docs/measures.md): files touched, lines added and removed with
source apart from tests, the cyclomatic complexity of the functions it touched (lizard) and the
Python dead code it brought (vulture). Changed-line coverage runs tests: grading/coverage.py.

A change is read from its unified diff against the input tree (a trial's change.patch), so the
trial measured on its host and a finished run measured again by `agentbench measure` take the
one path. A figure that does not apply is None, never 0.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from pytest_agentbench.fs import names
from pytest_agentbench.tasks.model import Tree
from pytest_agentbench.trajectory.checks import glob_pattern

TEST_DIRS = frozenset({"tests", "test", "testing", "__tests__", "spec"})
"""A path with one of these directories anywhere in it is a test path."""
TEST_FILES = (
    *("test_*.py", "*_test.py", "conftest.py", "*_test.go", "*_test.rs", "*Test.java"),
    *(f"*.{kind}.{ext}" for kind in ("test", "spec") for ext in ("js", "jsx", "ts", "tsx")),
    *("*_spec.rb", "*_test.rb"),
)
"""File-name patterns of test files wherever they are."""
RATIOS = (
    *("files_touched", "lines_added", "lines_removed", "source_lines_added"),
    *("source_lines_removed", "test_lines_added", "test_lines_removed"),
    *("complexity_added", "dead_code_added"),
)
"""The figures also given as a ratio to the task's reference change (`<name>_ratio`)."""
FIGURES = {
    "lines": (
        *("files_touched", "lines_added", "lines_removed", "source_lines_added"),
        *("source_lines_removed", "test_lines_added", "test_lines_removed"),
    ),
    "complexity": ("complexity_before", "complexity_after", "complexity_added"),
    "dead_code": ("dead_code_before", "dead_code_after", "dead_code_added"),
    "coverage": ("coverage_lines", "coverage_lines_run", "changed_line_coverage"),
}
"""The figures each measure adds to an Observation's `measures`."""

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_PART_SHOWN = re.compile(r"(.*): \(first .* of .* shown\)")
_CUT = "... (diff cut)"


@dataclass
class FileChange:
    """One file of a change, as its unified diff tells it. Line numbers count from 1."""

    path: str  # as the diff shows it (names.show of the encoded path)
    created: bool = False
    deleted: bool = False
    measurable: bool = True  # False: binary, read only in part or unreadable: touched only
    removed: list[tuple[int, str]] = field(default_factory=list)  # (line in the input, text)
    added: list[tuple[int, str]] = field(default_factory=list)  # (line in the result, text)
    hunks: list[tuple[int, list[str]]] = field(default_factory=list)  # (old start, its lines)


class ChangeCut(ValueError):
    """The change was cut at its size limit: any figure from it would be partial."""


def parse_change(patch: str) -> list[FileChange]:
    """The files of a change in the diff form trial/artifacts.py writes; ChangeCut when the
    diff was cut."""
    files: dict[str, FileChange] = {}
    current: FileChange | None = None
    old_left = new_left = 0
    old_line = new_line = 0
    old_name = ""
    for line in patch.split("\n"):  # as the diff was written: a CR stays in its line
        if old_left > 0 or new_left > 0:
            assert current is not None
            tag, text = line[:1], line[1:]
            current.hunks[-1][1].append(line)
            if tag in (" ", "-"):
                old_left, old_line = old_left - 1, old_line + 1
            if tag in (" ", "+"):
                new_left, new_line = new_left - 1, new_line + 1
            if tag == "-":
                current.removed.append((old_line, text))
            elif tag == "+":
                current.added.append((new_line, text))
            continue
        if line == _CUT:
            raise ChangeCut("the change was cut at its size limit")
        if line.startswith("--- "):
            old_name = line[4:]
        elif line.startswith("+++ "):
            new_name = line[4:]
            path = (new_name if new_name != "/dev/null" else old_name)[2:]
            current = files.setdefault(path, FileChange(path))
            current.created = old_name == "/dev/null"
            current.deleted = new_name == "/dev/null"
        elif (hunk := _HUNK.match(line)) and current is not None:
            old_left = 1 if hunk[2] is None else int(hunk[2])
            new_left = 1 if hunk[4] is None else int(hunk[4])
            old_line = int(hunk[1]) - (old_left > 0)
            new_line = int(hunk[3]) - (new_left > 0)
            current.hunks.append((old_line + 1, []))
        elif line.startswith("Binary file ") and line.endswith(" changed"):
            _unmeasurable(files, line[len("Binary file ") : -len(" changed")])
        elif line.startswith("Unreadable in workspace: "):
            _unmeasurable(files, line[len("Unreadable in workspace: ") :].rsplit(" (", 1)[0])
        elif shown := _PART_SHOWN.fullmatch(line):
            _unmeasurable(files, shown[1])
    return sorted(files.values(), key=lambda change: change.path)


def _unmeasurable(files: dict[str, FileChange], path: str) -> None:
    files.setdefault(path, FileChange(path)).measurable = False


def is_test_path(path: str, patterns: Sequence[str] | None = None) -> bool:
    """Whether a path is a test's: by the task's test_paths globs when it has them (as
    `protected` reads them: `**` any depth, `*` within one name), else TEST_DIRS and
    TEST_FILES."""
    if patterns is not None:
        return any(glob_pattern(glob).fullmatch(path) for glob in patterns)
    if TEST_DIRS.intersection(path.split("/")[:-1]):
        return True
    base = path.rsplit("/", 1)[-1]
    return any(fnmatchcase(base, glob) for glob in TEST_FILES)


def line_figures(changes: Sequence[FileChange], test_paths: Sequence[str] | None) -> dict[str, int]:
    """Files touched and lines added and removed, source apart from tests; files that could
    not be measured count as touched only."""
    figures = dict.fromkeys(FIGURES["lines"], 0)
    figures["files_touched"] = len(changes)
    for change in changes:
        if not change.measurable:
            continue
        side = "test" if is_test_path(change.path, test_paths) else "source"
        figures[f"{side}_lines_added"] += len(change.added)
        figures[f"{side}_lines_removed"] += len(change.removed)
    figures["lines_added"] = figures["source_lines_added"] + figures["test_lines_added"]
    figures["lines_removed"] = figures["source_lines_removed"] + figures["test_lines_removed"]
    return figures


@dataclass
class FileSides:
    """One measurable file's text before and after the change (None: absent on that side)."""

    change: FileChange
    before: str | None
    after: str | None


def file_sides(input_tree: Tree, changes: Iterable[FileChange]) -> list[FileSides]:
    """Each measurable file's text on both sides: the input tree's, and that with the change's
    hunks applied. A file whose input does not match its diff is left out."""
    known = set(input_tree.paths())
    sides = []
    for change in changes:
        if not change.measurable:
            continue
        before = None
        if not change.created:
            try:
                rel = names.to_os(change.path)
            except ValueError:
                continue
            if rel not in known:
                continue
            before = input_tree.read(rel).decode("utf-8", "replace")
        after = None if change.deleted else _apply(before or "", change.hunks)
        if after is not None or change.deleted:
            sides.append(FileSides(change, before, after))
    return sides


def _apply(before: str, hunks: Sequence[tuple[int, list[str]]]) -> str | None:
    """before with the hunks applied; None when a hunk's context does not match."""
    old = [line.removesuffix("\n") for line in before.splitlines(keepends=True)]
    out: list[str] = []
    position = 0  # lines of old already copied or replaced
    for start, lines in hunks:
        out.extend(old[position : start - 1])
        position = max(position, start - 1)
        for line in lines:
            tag, text = line[:1], line[1:]
            if tag in (" ", "-"):
                if position >= len(old) or old[position] != text:
                    return None
                position += 1
            if tag in (" ", "+"):
                out.append(text)
    out.extend(old[position:])
    return "\n".join(out) + "\n" if out else ""


def complexity_figures(sides: Sequence[FileSides]) -> dict[str, int] | None:
    """Cyclomatic complexity summed over the functions the change touched (those whose lines
    hold a removed line before or an added line after, matched by name), before and after; None
    when no file lizard reads was changed."""
    import lizard

    before = after = 0
    analysed = False
    for side in sides:
        if lizard.get_reader_for(side.change.path) is None:
            continue
        analysed = True
        old = _functions(side.change.path, side.before)
        new = _functions(side.change.path, side.after)
        touched = _holding(old, side.change.removed) | _holding(new, side.change.added)
        before += sum(complexity for name, _, _, complexity in old if name in touched)
        after += sum(complexity for name, _, _, complexity in new if name in touched)
    if not analysed:
        return None
    return {
        "complexity_before": before,
        "complexity_after": after,
        "complexity_added": after - before,
    }


def _functions(path: str, text: str | None) -> list[tuple[str, int, int, int]]:
    """(name, first line, last line, cyclomatic complexity) of each function lizard finds."""
    if text is None:
        return []
    import lizard

    found = lizard.analyze_file.analyze_source_code(path, text).function_list
    return [(f.name, f.start_line, f.end_line, f.cyclomatic_complexity) for f in found]


def _holding(functions: list[tuple[str, int, int, int]], lines: list[tuple[int, str]]) -> set[str]:
    return {
        name for name, first, last, _ in functions for line, _ in lines if first <= line <= last
    }


def dead_code_figures(sides: Sequence[FileSides]) -> dict[str, int] | None:
    """vulture's unused-code warnings over the changed Python files, before and after; None
    when no Python file was changed. A file that does not parse brings no warnings."""
    python = [side for side in sides if side.change.path.endswith(".py")]
    if not python:
        return None
    before = _unused([(side.change.path, side.before) for side in python])
    after = _unused([(side.change.path, side.after) for side in python])
    return {"dead_code_before": before, "dead_code_after": after, "dead_code_added": after - before}


def _unused(files: list[tuple[str, str | None]]) -> int:
    """How many warnings vulture gives for these files scanned together."""
    import vulture

    scanner = vulture.Vulture()
    for path, text in files:
        if text is not None and _parses(text):
            scanner.scan(text, filename=path)
    return len(scanner.get_unused_code())


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def measure_change(
    input_tree: Tree,
    patch: str | None,
    asked: Sequence[str],
    test_paths: Sequence[str] | None = None,
) -> dict[str, int | None]:
    """The asked measures' figures of a change (FIGURES), each None where it does not apply,
    the change was cut or is unknown (patch None)."""
    figures: dict[str, int | None] = {name: None for measure in asked for name in FIGURES[measure]}
    if patch is None:
        return figures
    try:
        changes = parse_change(patch)
    except ChangeCut:
        return figures
    if "lines" in asked:
        figures.update(line_figures(changes, test_paths))
    if "complexity" in asked or "dead_code" in asked:
        sides = file_sides(input_tree, changes)
        if "complexity" in asked:
            figures.update(complexity_figures(sides) or {})
        if "dead_code" in asked:
            figures.update(dead_code_figures(sides) or {})
    return figures


def with_ratios(
    trial: Mapping[str, int | float | None], reference: Mapping[str, int | float | None] | None
) -> dict[str, Any]:
    """The trial's figures and, for each RATIOS figure it has, `<name>_ratio` = trial /
    reference: None where either is unknown or the reference's is 0."""
    out: dict[str, Any] = dict(trial)
    for name in RATIOS:
        if name not in trial:
            continue
        mine, theirs = trial[name], (reference or {}).get(name)
        out[f"{name}_ratio"] = None if mine is None or not theirs else round(mine / theirs, 6)
    return out


def figure_names() -> list[str]:
    """Every figure a measure can add to an Observation's `measures`, ratios included."""
    names = [name for figures in FIGURES.values() for name in figures]
    return names + [f"{name}_ratio" for name in RATIOS]
