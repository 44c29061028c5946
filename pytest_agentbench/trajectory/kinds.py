"""Stand-in for the tool-call classifier (kind, paths, command) until the real one lands."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_agentbench.trajectory.model import Kind

_KINDS: dict[str, Kind] = {
    "bash": "shell",
    "shell": "shell",
    "exec_command": "shell",
    "shell_command": "shell",
    "read": "read",
    "write": "edit",
    "edit": "edit",
    "apply_patch": "edit",
    "grep": "search",
    "glob": "search",
}


def classify(name: str, arguments: Mapping[str, Any]) -> tuple[Kind, list[str], str | None]:
    """A call's kind, the paths it names and a shell call's command line."""
    kind = _KINDS.get(name.lower(), "other")
    path = next((arguments[k] for k in ("file_path", "filePath", "path") if k in arguments), None)
    command = arguments.get("cmd", arguments.get("command")) if kind == "shell" else None
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    return (
        kind,
        [path] if isinstance(path, str) else [],
        command if isinstance(command, str) else None,
    )
