"""Approach similarity: how alike the changes of a task's passing trials are.

A trial's change is the set of lines its final diff (the bounded diff.patch artifact) adds or
removes, each keyed by its file; the Observation keeps a short digest of each such line, not
the line. Two trials' similarity is the Jaccard index of their sets; a task's is the mean over
every pair of its passing trials. Only tasks graded by a verifier have one: against an
expected tree every passing trial ends in the same tree.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence

CHANGED_LINES_LIMIT = 2000
"""More changed lines than this and the set is not kept (unknown): the Observation stays lean."""

DIFF_CUT = "... (diff cut)\n"
_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_WHOLE_ENTRY = (
    "Binary file ",
    "Only in workspace: ",
    "Invalid entry ",
    "Unreadable in workspace: ",
)


def _digest(path: str, line: str) -> str:
    return hashlib.blake2b(f"{path}\0{line}".encode(), digest_size=6).hexdigest()


def changed_lines(diff: str) -> list[str] | None:
    """Sorted digests of the (file, +/- line) pairs of a unified diff; None when the diff was
    cut or holds more than CHANGED_LINES_LIMIT of them (the set would be partial)."""
    if diff.endswith(DIFF_CUT):
        return None
    found: set[str] = set()
    path = ""
    old = new = 0  # lines left in the current hunk, on each side
    for line in diff.splitlines():
        if old > 0 or new > 0:
            tag = line[:1]
            if tag in ("+", "-"):
                found.add(_digest(path, line))
            old -= tag in (" ", "-")
            new -= tag in (" ", "+")
            continue
        hunk = _HUNK.match(line)
        if hunk:
            old = 1 if hunk[1] is None else int(hunk[1])
            new = 1 if hunk[2] is None else int(hunk[2])
        elif line.startswith("+++ "):
            path = line[4:]
        elif line.startswith(_WHOLE_ENTRY):
            found.add(_digest("", line))
    return None if len(found) > CHANGED_LINES_LIMIT else sorted(found)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a & b| / |a | b|; two empty changes are the same change."""
    union = len(a | b)
    return 1.0 if union == 0 else len(a & b) / union


def mean_pairwise_jaccard(sets: Sequence[frozenset[str]]) -> float | None:
    """Mean Jaccard index over every pair of the sets; None with fewer than two."""
    pairs = list(itertools.combinations(sets, 2))
    return sum(jaccard(a, b) for a, b in pairs) / len(pairs) if pairs else None
