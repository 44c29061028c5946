"""Directory tasks: a task.toml beside workspace/, expected/ or verify, solution/ and cheats/."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.tasks.keys import unknown_keys
from pytest_agentbench.tasks.model import DirTree, MemoryTree, Task, TaskError, Tree

TASK_FILE = "task.toml"
DEFAULT_TIMEOUT = 300.0
KNOWN_KEYS = {
    "prompt",
    "timeout",
    "tags",
    "category",
    "description",
    "image",
    "no_solution",
    "seed_correct",
    "seed_wrong",
    "test_command",
    "protected",
    "test_paths",
    "segments",
}
KNOWN_ENTRIES = {TASK_FILE, "workspace", "expected", "verify", "solution", "cheats", "README.md"}
CHEATS = "cheats"
BYTECODE_SUFFIXES = (".pyc", ".pyo")


def bytecode_cache(entry: os.DirEntry[str]) -> bool:
    """Python's bytecode caches are never part of a task's trees: pip compiles every .py file
    it installs, so the bundled tasks of an installed wheel hold them beside their sources,
    and running a task's code by hand leaves them too. Kept, they would reach the agent, be
    demanded of it byte for byte, and change the fixture hash with the Python version."""
    return entry.name == "__pycache__" or entry.name.endswith(BYTECODE_SUFFIXES)


def is_task_dir(path: Path) -> bool:
    return (path / TASK_FILE).is_file()


def unknown_entries(task_dir: Path) -> list[str]:
    """Entries of a task directory that the format does not know (a stray backup, say): they
    are not part of the task, yet they would ship with it."""
    return sorted(set(os.listdir(task_dir)) - KNOWN_ENTRIES)


def find_task_dirs(root: Path) -> list[Path]:
    """Task directories at or below root, sorted so that every xdist worker agrees."""
    if is_task_dir(root):
        return [root]
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if TASK_FILE in filenames:
            found.append(Path(dirpath))
            dirnames.clear()  # a task's own subdirectories are data, not tasks
    return sorted(found)


def read_toml(toml_path: Path) -> dict[str, Any]:
    """A task file's TOML table; a file that is not UTF-8 TOML is a TaskError naming it."""
    try:
        return tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"{toml_path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise TaskError(f"{toml_path}: not UTF-8 text: {exc}") from None


def known_keys_only(
    table: dict[str, Any],
    known: Collection[str],
    toml_path: Path,
    reads: str,
    *,
    within: Sequence[str] = (),
    fix: str = "fix the spelling or remove it",
) -> None:
    """An error naming each key of table (the table at `within`, e.g. ("agent",)) that is not
    known, with its line and nearest known key, what the format reads instead (`reads`, e.g.
    "a Reasonix task reads") and the fix."""
    unknown = unknown_keys(table, known, toml_path, within=within)
    if unknown:
        raise TaskError(f"{unknown}; {reads} {', '.join(sorted(known))} ({fix})")


def required_prompt(data: dict[str, Any], toml_path: Path) -> str:
    """data["prompt"], a string that is not blank, else an error naming the fix."""
    if "prompt" not in data:
        raise TaskError(f"{toml_path}: missing required field 'prompt' (add prompt = \"...\")")
    prompt: str = field(data, "prompt", str, toml_path, "a non-empty string")
    if not prompt.strip():
        raise TaskError(f"{toml_path}: field 'prompt' is empty; write the instruction there")
    return prompt


def field(data: dict[str, Any], key: str, kind: type, toml_path: Path, hint: str) -> Any:
    """data[key] if it is of `kind` (never a bool posing as a number), else an error naming it."""
    value = data[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise TaskError(f"{toml_path}: field {key!r} must be {hint}, got {value!r}")
    return value


def load_directory_task(task_dir: Path) -> Task:
    """Load and check one task directory; raise TaskError naming the file and the fix."""
    toml_path = task_dir / TASK_FILE
    data = read_toml(toml_path)
    known_keys_only(data, KNOWN_KEYS, toml_path, "allowed keys are")
    prompt = required_prompt(data, toml_path)
    timeout = DEFAULT_TIMEOUT
    if "timeout" in data:
        timeout = field(data, "timeout", float, toml_path, "a positive number of seconds")
        if timeout <= 0:
            raise TaskError(f"{toml_path}: field 'timeout' must be > 0 seconds, got {timeout}")
    tags: list[str] = []
    if "tags" in data:
        tags = field(data, "tags", list, toml_path, "a list of strings")
        if not all(isinstance(tag, str) and tag for tag in tags):
            raise TaskError(f"{toml_path}: field 'tags' must be a list of non-empty strings")
    category = field(data, "category", str, toml_path, "a string") if "category" in data else ""
    description = (
        field(data, "description", str, toml_path, "a string") if "description" in data else ""
    )
    image = field(data, "image", str, toml_path, "a Docker image name") if "image" in data else None
    no_solution = "no_solution" in data and flag(data, "no_solution", toml_path)
    seeds = {
        key: field(data, key, str, toml_path, "a string") if key in data else None
        for key in ("seed_correct", "seed_wrong")
    }
    test_command = test_command_field(data, toml_path)
    protected = workspace_globs(data, "protected", toml_path) or ()
    test_paths = workspace_globs(data, "test_paths", toml_path)
    segments = segments_field(data, toml_path)

    # One listing of the task directory answers every "is there a ..." below.
    with os.scandir(task_dir) as listing:
        entries = {entry.name: entry for entry in listing}
    verifier = task_dir / "verify"
    expected_entry = entries.get("expected")
    has_expected = expected_entry is not None and expected_entry.is_dir()
    has_verifier = "verify" in entries and verifier.exists()
    if no_solution:
        _check_no_solution(task_dir, toml_path, has_expected, has_verifier, "solution" in entries)
    if has_expected == has_verifier:
        problem = "both expected/ and verify" if has_expected else "neither expected/ nor verify"
        raise TaskError(
            f"{task_dir}: has {problem}; a task needs exactly one grader "
            "(an expected/ tree or an executable verify script)"
        )
    if has_verifier and not (verifier.is_file() and os.access(verifier, os.X_OK)):
        raise TaskError(f"{verifier}: the verifier must be an executable file (chmod +x verify)")

    trees: dict[str, DirTree] = {}
    for name in ("workspace", "expected", "solution"):
        entry = entries.get(name)
        if entry is None:
            continue
        if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
            raise TaskError(f"{task_dir / name}: {name} must be a directory")
        trees[name] = DirTree(task_dir / name, skip=bytecode_cache)
        trees[name].paths()  # raises TaskError on a symlink or special file inside
    # One DirTree per tree for the whole run: its listing is walked once, not once per trial.
    input_tree: Tree = trees.get("workspace") or MemoryTree({})
    expected_tree = trees.get("expected")
    solution_tree = trees.get("solution")
    cheats = _cheat_trees(task_dir, entries.get(CHEATS))

    task = Task(
        id=task_dir.name,
        prompt=prompt,
        source=str(task_dir),
        make_input=lambda: input_tree,
        make_expected=(lambda: expected_tree) if expected_tree is not None else None,
        verifier=verifier if has_verifier else None,
        make_solution=(lambda: solution_tree) if solution_tree is not None else None,
        timeout=timeout,
        category=category,
        tags=tuple(tags),
        description=description,
        image=image,
        no_solution=no_solution,
        seed_correct=seeds["seed_correct"],
        seed_wrong=seeds["seed_wrong"],
        make_cheats=(lambda: cheats) if cheats else None,
        test_command=test_command,
        protected=protected,
        test_paths=test_paths,
        segments=segments,
    )
    return task


def test_command_field(data: dict[str, Any], toml_path: Path) -> str | None:
    """data["test_command"]: a command line that is not blank, or None when absent."""
    if "test_command" not in data:
        return None
    command: str = field(data, "test_command", str, toml_path, 'a command line, e.g. "pytest -q"')
    if not command.strip():
        raise TaskError(
            f"{toml_path}: field 'test_command' is empty; write the command that runs the "
            "task's own tests in its workspace, or remove the field"
        )
    return command.strip()


def segments_field(data: dict[str, Any], toml_path: Path) -> int | None:
    """data["segments"]: the legs of one session the task's trials run in; None when absent."""
    if "segments" not in data:
        return None
    legs: int = field(data, "segments", int, toml_path, "a whole number of legs >= 1")
    if legs < 1:
        raise TaskError(
            f"{toml_path}: field 'segments' must be >= 1, got {legs} (1: one unbroken session)"
        )
    return legs


def workspace_globs(data: dict[str, Any], key: str, toml_path: Path) -> tuple[str, ...] | None:
    """data[key]: globs relative to the workspace (none absolute, none escaping it); None
    when the task does not give the field."""
    if key not in data:
        return None
    hint = 'a list of glob patterns relative to the workspace, e.g. ["tests/**"]'
    globs = field(data, key, list, toml_path, hint)
    for glob in globs:
        if not isinstance(glob, str) or not glob.strip():
            raise TaskError(f"{toml_path}: field {key!r} must be {hint}, got {glob!r}")
        if glob.startswith(("/", "~")) or ".." in glob.split("/"):
            raise TaskError(
                f"{toml_path}: field {key!r} holds {glob!r}, which is not inside the "
                "workspace; name paths relative to it (tests/** for workspace/tests/)"
            )
    return tuple(globs)


def flag(data: dict[str, Any], key: str, toml_path: Path) -> bool:
    """data[key] if it is true or false, else an error naming it."""
    value = data[key]
    if not isinstance(value, bool):
        raise TaskError(f"{toml_path}: field {key!r} must be true or false, got {value!r}")
    return value


def _check_no_solution(
    task_dir: Path, toml_path: Path, has_expected: bool, has_verifier: bool, has_solution: bool
) -> None:
    """A no_solution task is graded by its verifier alone: no expected tree, no reference."""
    if has_expected or not has_verifier:
        found = "has expected/" if has_expected else "has no verify script"
        raise TaskError(
            f"{task_dir}: no_solution = true in {toml_path.name}, but the task {found}; "
            "a task without a solution is graded by an executable verify script that passes "
            "on the pristine workspace and fails when the agent tampered"
            + (": replace expected/ with verify" if has_expected else ": add verify")
        )
    if has_solution:
        raise TaskError(
            f"{task_dir}: no_solution = true in {toml_path.name}, but the task has solution/; "
            "it has no reference result: remove solution/ (put tampered results under "
            "cheats/<name>/)"
        )


def _cheat_trees(task_dir: Path, entry: os.DirEntry[str] | None) -> dict[str, Tree]:
    """cheats/<name>/ trees (each laid over the pristine workspace), checked like the others."""
    if entry is None:
        return {}
    root = task_dir / CHEATS
    if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
        raise TaskError(f"{root}: cheats must be a directory of cheat trees, cheats/<name>/")
    cheats: dict[str, Tree] = {}
    with os.scandir(root) as listing:
        for child in sorted(listing, key=lambda e: e.name):
            if child.is_symlink() or not child.is_dir(follow_symlinks=False):
                raise TaskError(
                    f"{root / child.name}: cheats/ holds only directories, one tampered result "
                    "each (move the file into cheats/<name>/)"
                )
            tree = DirTree(Path(child.path), skip=bytecode_cache)
            tree.paths()  # raises TaskError on a symlink or special file inside
            cheats[child.name] = tree
    if not cheats:
        raise TaskError(f"{root}: is empty; add cheats/<name>/ trees or remove cheats/")
    return cheats
