"""Subcommands of the `agentbench` console script (see pytest_agentbench.cli): the face, which
may import any room."""

from __future__ import annotations

from pathlib import Path


def write_output(option: str, path: Path, text: str) -> None:
    """Write a command's output file, its parents made; failure names the option and the path."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ValueError(
            f"{option} {path}: cannot write it ({exc.strerror}); give a writable path"
        ) from None


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def no_tasks(specs: list[str]) -> ValueError:
    """The error for a selection without a single task: name the sources and what a task is."""
    sources = " ".join(f"--tasks {spec}" for spec in specs) or "the bundled selection"
    return ValueError(
        f"{sources}: no tasks found (a task is a directory holding task.toml; give the "
        "directory above the task directories, or builtin:NAME)"
    )
