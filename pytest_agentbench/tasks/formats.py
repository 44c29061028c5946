"""Task formats: this project's directory tasks and other benchmarks' tasks, loaded as they are.

Every format keeps a task in a directory holding a task.toml. A directory that loads as this
project's own format is one; else the file it holds names its format (verify.py:
rerun-bench, verify.sh: Reasonix e2ebench, instruction.md: Harbor / Terminal-Bench 2).
A ``FORMAT:`` prefix on a --tasks value forces one format for every task below that source;
``swebench:FILE`` names a JSONL file of SWE-bench instances, each line a task.
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path

from pytest_agentbench.tasks.model import Task, TaskError

NATIVE = "agentbench"
RERUN = "rerun"
REASONIX = "reasonix"
HARBOR = "harbor"
SWEBENCH = "swebench"  # a JSONL file of instances, not a directory (tasks/swebench.py)
FORMAT_NAMES = (NATIVE, RERUN, REASONIX, HARBOR, SWEBENCH)
# A source spec's format prefix: a lowercase word and a colon ("rerun:tasks"); a path that
# itself holds a colon is written ./PATH.
_PREFIX = re.compile(r"([a-z][a-z0-9-]*):(.*)\Z", re.DOTALL)
# The file whose presence marks a foreign format, and the keys that betray one whose file is
# missing (for the error message only, with what the file is for).
_MARKER_FILES = ((RERUN, "verify.py"), (REASONIX, "verify.sh"), (HARBOR, "instruction.md"))
_TELLTALE_KEYS = {
    RERUN: frozenset({"id", "title"}),
    REASONIX: frozenset({"class", "max_steps", "timeout_sec"}),
    HARBOR: frozenset({"metadata", "verifier", "agent", "environment"}),
}
_MARKER_ROLE = {
    RERUN: "which is graded by its verify.py",
    REASONIX: "which is graded by its verify.sh",
    HARBOR: "whose prompt is its instruction.md",
}


def split_format(spec: str) -> tuple[str | None, str]:
    """(format or None, the rest) of a --tasks value; builtin:NAME is not a format."""
    match = _PREFIX.match(spec)
    if match is None or match.group(1) == "builtin":
        return None, spec
    return match.group(1), match.group(2)


def check_format(name: str, spec: str, where: str = "--tasks") -> None:
    """Raise ValueError naming the known formats when NAME is not one."""
    if name not in FORMAT_NAMES:
        raise ValueError(
            f"{where} {spec}: unknown task format {name!r}; known: "
            f"{', '.join(FORMAT_NAMES)} (a path that holds a colon is written ./PATH)"
        )


def detect_format(task_dir: Path) -> str:
    """The format of a task directory, from the verifier file it holds."""
    prefix = f"{task_dir}{os.sep}"  # joined as strings: this runs once per task collected
    for name, marker in _MARKER_FILES:
        if os.path.isfile(prefix + marker):
            return name
    return NATIVE


@functools.cache
def _loaders() -> dict[str, Callable[[Path], Task]]:
    from pytest_agentbench.tasks.directory import load_directory_task
    from pytest_agentbench.tasks.harbor import load_harbor_task
    from pytest_agentbench.tasks.reasonix import load_reasonix_task
    from pytest_agentbench.tasks.rerun import load_rerun_task

    return {
        NATIVE: load_directory_task,
        RERUN: load_rerun_task,
        REASONIX: load_reasonix_task,
        HARBOR: load_harbor_task,
    }


def load_task_dir(task_dir: Path, forced: str | None = None) -> Task:
    """Load one task directory in the forced format, or else in the first that fits.

    This project's format is tried first, so its tasks load exactly as they always did; only
    a directory it rejects is looked at again for another format's verifier file.
    """
    loaders = _loaders()
    if forced is not None:
        return loaders[forced](task_dir)
    try:
        return loaders[NATIVE](task_dir)
    except TaskError as exc:
        native_error = exc
    name = detect_format(task_dir)
    if name != NATIVE:
        return loaders[name](task_dir)
    raise TaskError(_foreign_hint(task_dir) or str(native_error)) from None


def _foreign_hint(task_dir: Path) -> str:
    """The error for a task that failed to load as a native one but whose keys look like a
    foreign format's: the verifier it lacks; empty when it looks like none."""
    try:
        keys = set(tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return ""
    for name, marker in _MARKER_FILES:
        telltale = _TELLTALE_KEYS[name]
        if (telltale <= keys) if name == RERUN else (telltale & keys):
            return (
                f"{task_dir / marker}: missing; the keys of {task_dir / 'task.toml'} look like "
                f"a {name} task's, {_MARKER_ROLE[name]} (add it; a task of this "
                "project's format needs an expected/ tree or a verify script instead)"
            )
    return ""


def forced_formats(sources: list[tuple[str | None, Path]]) -> dict[Path, str]:
    """Source directory (absolute) -> forced format, for the sources given one."""
    return {Path(os.path.abspath(path)): name for name, path in sources if name is not None}


def forced_format(formats: dict[Path, str], task_dir: Path) -> str | None:
    """The format forced on the source holding task_dir, if any."""
    if not formats:
        return None
    path = Path(os.path.abspath(task_dir))
    for root, name in formats.items():
        if path == root or root in path.parents:
            return name
    return None
