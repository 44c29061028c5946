"""Paths in a trajectory named the same on every machine: the trial's workspace, its task
directory and the home directory become `<workspace>`, `<task>` and `~`, so trajectories from
different hosts, sandboxes and runs compare, and no host's layout leaks into a report."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

WORKSPACE = "<workspace>"
TASK = "<task>"
HOME = "~"
# A prefix is replaced only as a whole path: not after a character that would make it the
# tail of a longer path (nor after a placeholder already written), not before one that would
# make it the head of a longer name (/ws for /ws2, /ws.bak).
_BEFORE = r"(?<![\w.~/>-])"
_AFTER = r"(?![\w.-])"


class PathNormaliser:
    """Replaces each given path prefix, longest first, with its placeholder.

    Every trial makes its own, over paths no other trial has, and most of the text it sees
    names none of them: the pattern is compiled on the first text that holds a prefix (a
    compile costs about a millisecond of the interpreter, the substring test microseconds).
    """

    def __init__(self, workspace: Sequence[str], task: Sequence[str], home: Sequence[str]) -> None:
        names: dict[str, str] = {}
        for placeholder, prefixes in ((HOME, home), (TASK, task), (WORKSPACE, workspace)):
            for prefix in prefixes:
                name = prefix.rstrip("/")
                if name:  # "/" alone (or "") is the prefix of every path: never replaced
                    names[name] = placeholder  # the same path given twice: the later kind wins
        self._names = names
        self._pattern: re.Pattern[str] | None = None

    def text(self, s: str) -> str:
        if not any(name in s for name in self._names):
            return s
        if self._pattern is None:
            ordered = sorted(self._names, key=len, reverse=True)
            self._pattern = re.compile(
                _BEFORE + "(?:" + "|".join(map(re.escape, ordered)) + ")" + _AFTER
            )
        return self._pattern.sub(lambda match: self._names[match.group()], s)

    def value(self, obj: Any) -> Any:
        """A JSON value with every string in it normalised (keys are names, left as they are)."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {key: self.value(item) for key, item in obj.items()}
        if isinstance(obj, list):
            return [self.value(item) for item in obj]
        return obj
