"""What a tool call is, whatever its CLI calls it: its kind (shell, read, edit, search,
other), the files it reads or writes, and a shell call's command line.

One table for the three CLIs' tool names (codex, Claude Code, opencode) and the names the
mock and foreign ATIF files use; an unknown name is `other`. A shell command that hands codex
an apply_patch heredoc is the edit it is.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from pytest_agentbench.trajectory.model import Kind

KIND_OF: dict[str, Kind] = {
    # shells
    **dict.fromkeys(
        ("bash", "shell", "exec_command", "shell_command", "local_shell", "run", "execute"),
        "shell",
    ),
    # reads
    **dict.fromkeys(("read", "notebookread", "view_image", "read_file", "cat"), "read"),
    # writes and edits
    **dict.fromkeys(
        ("write", "edit", "multiedit", "notebookedit", "apply_patch", "patch", "write_file"),
        "edit",
    ),
    **dict.fromkeys(("str_replace_based_edit_tool", "str_replace_editor", "create"), "edit"),
    # searches
    **dict.fromkeys(
        ("grep", "glob", "ls", "list", "search", "web_search", "websearch", "webfetch"), "search"
    ),
    **dict.fromkeys(("codesearch", "find", "list_dir", "toolsearch"), "search"),
}
PATH_KEYS = ("file_path", "filePath", "path", "notebook_path", "filename", "file")
PATCH_HEADER = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)
SHELL_WRAPPERS = ("bash", "sh", "zsh", "dash")


def patch_paths(text: str) -> list[str]:
    """The files an apply_patch envelope adds, updates, deletes or moves to, in order."""
    found = [(m.group(1) or m.group(2)).strip() for m in PATCH_HEADER.finditer(text)]
    return list(dict.fromkeys(found))


def command_line(command: Any) -> str | None:
    """A shell call's command as one line: argv lists joined, and `bash -lc CMD` unwrapped to
    CMD (what the agent asked to run)."""
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        words = list(command)
    elif isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:
            return command
        if not _wrapped(words):
            return command
    else:
        return None
    if _wrapped(words):
        return words[2]
    return shlex.join(words)


def _wrapped(words: list[str]) -> bool:
    return (
        len(words) == 3
        and words[0].rsplit("/", 1)[-1] in SHELL_WRAPPERS
        and words[1] in ("-c", "-lc", "-ic")
    )


def classify(name: str, arguments: Mapping[str, Any]) -> tuple[Kind, list[str], str | None]:
    """The call's kind, the paths it names (as named) and a shell call's command line."""
    kind = KIND_OF.get(name.lower(), "other")
    paths = [str(arguments[k]) for k in PATH_KEYS if isinstance(arguments.get(k), str)]
    command = None
    if kind == "shell":
        command = command_line(arguments.get("cmd", arguments.get("command")))
        if command is not None and "apply_patch" in command and "*** Begin Patch" in command:
            return "edit", patch_paths(command), command
    patch = arguments.get("input") if name == "apply_patch" else None
    if isinstance(patch, str):
        paths = patch_paths(patch)
    edits = arguments.get("edits")
    if kind == "edit" and isinstance(edits, list):  # MultiEdit names its file once
        paths = paths or [str(e.get("file_path")) for e in edits if isinstance(e, Mapping)]
    return kind, list(dict.fromkeys(paths)), command
