"""A failed trial on its pytest report: one line for the summary, the whole story behind it.

pytest's short summary shows a failure's crash message, and on CI the whole of a plain-text
one: a trial's story (paths, diffs, verifier output) would fill the screen. So the story is a
native traceback entry (shown by -v, --tb and junitxml) whose crash message is its first line.
It is made of pytest's own serialisable parts, so it crosses xdist's wire unchanged.
"""

from __future__ import annotations

from pathlib import Path

from _pytest._code.code import (
    ReprEntryNative,
    ReprExceptionInfo,
    ReprFileLocation,
    ReprTraceback,
)


def trial_failure(path: Path, text: str) -> ReprExceptionInfo:
    """The report's longrepr for a trial that failed with `text`."""
    lines = text.splitlines() or ["the trial failed"]
    story = ReprTraceback([ReprEntryNative([line + "\n" for line in lines])], None, "native")
    return ReprExceptionInfo(story, ReprFileLocation(str(path), 0, lines[0]))
