"""Task sources: what --tasks, the ini value or the bundled defaults name, as paths to collect."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from pytest_agentbench.tasks.directory import find_task_dirs
from pytest_agentbench.tasks.formats import (
    HARBOR,
    SWEBENCH,
    check_format,
    detect_format,
    split_format,
)

BUILTIN_PREFIX = "builtin:"
SUITE_MARKER = "agentbench-suite.toml"
PACKAGE_DIR = Path(__file__).resolve().parent.parent


def bundled_tasks_dir() -> Path:
    """The bundled directory tasks: inside the installed wheel, or the source checkout's tasks/."""
    installed = PACKAGE_DIR / "bundled_tasks"
    return installed if installed.is_dir() else PACKAGE_DIR.parent / "tasks"


def directory_suites() -> dict[str, Path]:
    """Bundled suites of hand-written directory tasks, by name. builtin:tasks is part of the
    default selection; builtin:integrity is asked for by name, since its no-solution half is
    scored on honesty rather than accuracy and would change what a default run measures."""
    return {"tasks": bundled_tasks_dir(), "integrity": PACKAGE_DIR / "suites" / "integrity"}


def suite_dirs() -> dict[str, Path]:
    """Bundled generated suites by name (each a package with an agentbench-suite.toml)."""
    found: dict[str, Path] = {}
    for marker in sorted((PACKAGE_DIR / "suites").glob(f"*/{SUITE_MARKER}")):
        found[suite_name(marker.parent)] = marker.parent
    return found


def suite_name(directory: Path) -> str:
    data = tomllib.loads((directory / SUITE_MARKER).read_text(encoding="utf-8"))
    return str(data.get("name", directory.name))


def is_suite_dir(path: Path) -> bool:
    return (path / SUITE_MARKER).is_file()


def builtin_source(spec: str, where: str = "--tasks") -> Path:
    """The directory of builtin:NAME; an unknown NAME is a usage error naming WHERE it was
    given (the option, or the ini file and key) and the known names."""
    name = spec[len(BUILTIN_PREFIX) :]
    suites = {**directory_suites(), **suite_dirs()}
    if name not in suites:
        known = ", ".join(f"builtin:{n}" for n in suites)
        raise pytest.UsageError(f"{where} {spec}: unknown built-in suite; known: {known}")
    return suites[name]


def resolve_source(spec: str, base: Path) -> Path:
    """A --tasks value as a path: a directory, FORMAT:DIRECTORY, or builtin:NAME."""
    return resolve_formatted_source(spec, base)[1]


def resolve_formatted_source(spec: str, base: Path) -> tuple[str | None, Path]:
    """A --tasks value as (the format it forces, or None; its directory)."""
    if spec.startswith(BUILTIN_PREFIX):
        return None, builtin_source(spec)
    forced, rest = split_format(spec)
    if forced is not None:
        try:
            check_format(forced, spec)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    if forced == SWEBENCH:
        return forced, _instances_file(spec, rest, base)
    return forced, _directory(spec, rest, base)


def _given(spec: str, rest: str, base: Path, kind: str, wanted: str) -> Path:
    """The path a --tasks source names (relative to base), which must be a KIND ("file" or
    "directory"); the error says what to give instead."""
    path = Path(rest) if Path(rest).is_absolute() else base / rest
    if not (path.is_file() if kind == "file" else path.is_dir()):
        raise pytest.UsageError(f"--tasks {spec}: {path} is not a {kind} (give {wanted})")
    return path


def _instances_file(spec: str, rest: str, base: Path) -> Path:
    wanted = "a JSONL file of SWE-bench instances, one JSON object a line"
    return Path(os.path.abspath(_given(spec, rest, base, "file", wanted)))


def is_instances_file(path: Path, sources: list[tuple[str | None, Path]]) -> bool:
    """Whether path is a swebench:FILE source of this run."""
    return any(forced == SWEBENCH and root == path for forced, root in sources)


def _directory(spec: str, rest: str, base: Path) -> Path:
    wanted = "a directory of task directories or builtin:NAME"
    return _given(spec, rest, base, "directory", wanted)


def default_sources() -> list[Path]:
    """The bundled selection: the directory tasks plus every bundled generated suite."""
    return [bundled_tasks_dir(), *suite_dirs().values()]


def resolve_sources(specs: tuple[str, ...], base: Path) -> list[Path]:
    if not specs:
        return default_sources()
    return [resolve_source(spec, base) for spec in specs]


def resolve_formatted_sources(specs: tuple[str, ...], base: Path) -> list[tuple[str | None, Path]]:
    """Every source with the format it forces (None: each task's own files decide)."""
    if not specs:
        return [(None, path) for path in default_sources()]
    return [resolve_formatted_source(spec, base) for spec in specs]


def bring_own_images(specs: tuple[str, ...], base: Path) -> bool:
    """Whether every task of the sources runs in an image of its own (Harbor builds its own,
    a SWE-bench instance names its evaluation image), so that
    --sandbox=docker needs no --docker-image; False for no sources (the bundled suite)."""
    if not specs:
        return False
    for forced, root in resolve_formatted_sources(specs, base):
        if forced == SWEBENCH:
            continue
        if forced not in (None, HARBOR):
            return False
        found = find_task_dirs(root)
        if not found or (forced is None and not all(detect_format(d) == HARBOR for d in found)):
            return False
    return True
