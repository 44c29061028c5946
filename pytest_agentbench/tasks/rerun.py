"""rerun-bench tasks as they are: task.toml, workspace/, a hidden verify.py and solution/.

The verifier runs as rerun-bench 0.3.0 runs it (rerun_bench/tasks.py ``verify``): a Python
interpreter runs verify.py from the task directory, with the finished workspace copy as working
directory, RERUN_BENCH_TASK_DIR naming the task directory (several verifiers read the pristine
workspace/ or mutants/ beside them), PYTHONHASHSEED=0, PYTHONDONTWRITEBYTECODE=1, and the
task's verify_timeout (60 s unless given). Only workspace/ reaches the agent, without the
caches rerun-bench leaves out of its copies (__pycache__, .git, *.pyc, ...). The verifier alone
decides, as rerun-bench's runner does: the agent's exit status and timeout are recorded, not
scored.

Since the verifier may read anything beside it, the fixture hash covers the whole task
directory but the caches Python and its tools rebuild from the sources (__pycache__,
.pytest_cache, .ruff_cache, .mypy_cache, *.pyc, *.pyo), which cannot change what it reads.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from pytest_agentbench.tasks.directory import bytecode_cache, known_keys_only, read_toml
from pytest_agentbench.tasks.hashing import directory_files
from pytest_agentbench.tasks.model import DirTree, Task, TaskError

TASK_FILE = "task.toml"
VERIFIER = "verify.py"
REQUIRED_KEYS = ("id", "title", "prompt", "timeout")
KNOWN_KEYS = frozenset({*REQUIRED_KEYS, "tags", "verify_timeout"})
DEFAULT_VERIFY_TIMEOUT = 60
# What rerun-bench's workspace copies leave out (rerun_bench/workspace.py), beside Python's
# bytecode caches, which no task format counts (directory.bytecode_cache).
IGNORED_DIRS = frozenset({".pytest_cache", ".git", ".ruff_cache", ".mypy_cache", "node_modules"})
# What the fixture hash leaves out of the task directory: caches rebuilt from the sources.
UNHASHED_DIRS = frozenset({".pytest_cache", ".ruff_cache", ".mypy_cache"})


def _ignored(entry: os.DirEntry[str]) -> bool:
    return entry.name in IGNORED_DIRS or bytecode_cache(entry)


def _unhashed(entry: os.DirEntry[str]) -> bool:
    return entry.name in UNHASHED_DIRS or bytecode_cache(entry)


def _integer(data: dict[str, Any], key: str, toml_path: Path) -> int:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise TaskError(f"{toml_path}: field {key!r} must be a positive whole number of seconds")
    return value


def load_rerun_task(task_dir: Path) -> Task:
    """Load one rerun-bench task directory; raise TaskError naming the file and the fix."""
    task_dir = Path(os.path.abspath(task_dir))
    toml_path = task_dir / TASK_FILE
    data = read_toml(toml_path)
    missing = [key for key in REQUIRED_KEYS if key not in data]
    if missing:
        raise TaskError(
            f"{toml_path}: missing required key(s) {', '.join(missing)} "
            f"(a rerun-bench task.toml has {', '.join(REQUIRED_KEYS)})"
        )
    known_keys_only(data, KNOWN_KEYS, toml_path, "a rerun-bench task reads")
    if data["id"] != task_dir.name:
        raise TaskError(
            f"{toml_path}: id {data['id']!r} must match the directory name {task_dir.name!r} "
            "(rename one of them)"
        )
    for key in ("title", "prompt"):
        if not isinstance(data[key], str) or not data[key].strip():
            raise TaskError(f"{toml_path}: field {key!r} must be a non-empty string")
    tags = data.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(tag, str) and tag for tag in tags):
        raise TaskError(f"{toml_path}: field 'tags' must be a list of non-empty strings")
    timeout = _integer(data, "timeout", toml_path)
    verify_timeout = (
        _integer(data, "verify_timeout", toml_path)
        if "verify_timeout" in data
        else DEFAULT_VERIFY_TIMEOUT
    )
    verifier = task_dir / VERIFIER
    if not verifier.is_file():
        raise TaskError(f"{verifier}: missing; a rerun-bench task is graded by its verify.py")
    workspace = task_dir / "workspace"
    if workspace.is_symlink() or not workspace.is_dir():
        raise TaskError(f"{workspace}: missing; a rerun-bench task needs a workspace/ directory")
    input_tree = DirTree(workspace, skip=_ignored)
    input_tree.paths()  # raises TaskError on a symlink or special file inside
    solution_dir = task_dir / "solution"
    solution_tree = DirTree(solution_dir, skip=_ignored) if solution_dir.is_dir() else None
    if solution_tree is not None:
        solution_tree.paths()
    return Task(
        id=task_dir.name,
        prompt=data["prompt"].strip(),
        source=str(task_dir),
        make_input=lambda: input_tree,
        verifier=verifier.resolve(),
        verifier_command=(sys.executable,),
        verifier_env={
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "RERUN_BENCH_TASK_DIR": str(task_dir.resolve()),
        },
        verify_timeout=float(verify_timeout),
        make_task_files=lambda: directory_files(task_dir, skip=_unhashed),
        make_solution=(lambda: solution_tree) if solution_tree is not None else None,
        timeout=float(timeout),
        tags=tuple(tags),
        description=data["title"],
        meta={"format": "rerun"},
        exit_scored=False,
    )
