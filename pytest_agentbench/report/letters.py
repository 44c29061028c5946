"""The progress letters of trials, and the legend that explains them.

pytest's letters say passed or failed; a trial says more: exact at the first round, exact
only after a recovery or retry, not exact, reused from a resumed run, or not scored.
"""

from __future__ import annotations

from typing import Any

import pytest

# (category, letter, word) per kind of trial report; the category keeps pytest's counts.
FIRST_EXACT = ("passed", ".", "PASSED")
RECOVERED = ("passed", "+", "PASSED (after recovery/retry)")
NOT_EXACT = ("failed", "F", "FAILED")
REUSED_EXACT = ("passed", "R", "PASSED (reused)")
REUSED_NOT_EXACT = ("failed", "R", "FAILED (reused)")
PROVIDER_STOP = ("failed", "!", "FAILED (provider stop)")
INFRASTRUCTURE = ("failed", "I", "FAILED (infrastructure)")
ERROR = ("failed", "E", "FAILED (error)")

LEGEND = (
    "agentbench letters: progress . exact at the first round, + exact only after a recovery or "
    "retry, F not exact, R reused from the resumed run, ! provider stop (not scored), "
    "I infrastructure failure (not scored), E error (the trial could not run), s not run; "
    "task table, one per repeat: P exact, F not exact, - not scored"
)
"""The one legend of both alphabets: printed once, before the trials, whenever they run."""


def trial_status(report: pytest.TestReport, observation: dict[str, Any]) -> tuple[str, str, str]:
    """Category, letter and word of a trial's call report."""
    if observation.get("reused"):
        return REUSED_EXACT if report.passed else REUSED_NOT_EXACT
    if observation.get("status") == "provider_stop":
        return PROVIDER_STOP
    if observation.get("status") == "infrastructure":
        return INFRASTRUCTURE
    if observation.get("status") == "error":
        return ERROR
    if not report.passed:
        return NOT_EXACT
    return FIRST_EXACT if observation.get("first_exact") else RECOVERED
