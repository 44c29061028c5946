"""Attempts and failure classes, after Reasonix's e2ebench: Pass@<=N, time to correct solution
and the class each trial ended in.

With --retry-failures N a failed trial is tried afresh up to N more times. Pass@<=N is the
share of scored trials solved within N attempts; a solved trial's TTCS is the agent wall time
of its solving attempt plus that of every failed attempt before it. An unsolved trial has no
TTCS (null, not counted), and neither has a solved one whose attempts' times were not all
recorded. Classes name how a trial ended; the ones that are not the agent's (provider stops,
infrastructure, harness errors, trials not started) are never counted as agent failures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_agentbench.tasks.observation import (
    BREAKER_OPEN,
    ERROR,
    INFRASTRUCTURE,
    INTERRUPTED,
    PROVIDER_STOP,
    SCORED,
    Observation,
)

SOLVED = "solved"
AGENT_FAILURES = ("timeout", "over_disk", "agent_exit", "no_change", "wrong_patch", "unclassified")
"""How a scored trial that was not solved ended, checked in this order on its last attempt:
its last round timed out; its workspace grew past --sandbox-disk; the agent exited non-zero;
it left the workspace as it found it; it changed it, wrongly; the record cannot tell."""

NOT_SCORED = {
    PROVIDER_STOP: "provider_stop",
    INFRASTRUCTURE: "infrastructure",
    ERROR: "harness_error",
    "budget_exhausted": "skipped",
    BREAKER_OPEN: "skipped",
    INTERRUPTED: "skipped",
}
"""The class of a trial that was not scored, by its status; none is the agent's."""

CLASSES = (SOLVED, *AGENT_FAILURES, *dict.fromkeys(NOT_SCORED.values()))


def solving_attempt(observation: Observation) -> int | None:
    """The attempt (0-based) a scored trial was solved in: that of its last round, where a
    trial stops once exact; None for a trial not solved or not scored."""
    if observation["status"] != SCORED or not observation["final_exact"]:
        return None
    rounds = observation["rounds"]
    return rounds[-1]["attempt"] if rounds else None


def time_to_solve(observation: Observation) -> float | None:
    """TTCS: the wall time of the solving attempt and of every failed attempt before it;
    None when the trial was not solved or any of those attempts' times is unknown."""
    solved = solving_attempt(observation)
    log = observation.get("attempt_log")
    if solved is None or log is None:
        return None
    walls = [entry["wall_s"] for entry in log if entry["attempt"] <= solved]
    if len(walls) != solved + 1 or any(wall is None for wall in walls):
        return None
    return float(sum(wall for wall in walls if wall is not None))


def trial_class(observation: Observation) -> str:
    """The class a trial ended in (CLASSES), read from its last attempt."""
    status = observation["status"]
    if status != SCORED:
        return NOT_SCORED.get(status, "skipped")
    if observation["final_exact"]:
        return SOLVED
    rounds = observation["rounds"]
    last = rounds[-1] if rounds else None
    log = observation.get("attempt_log")
    changed = log[-1]["changed"] if log else None
    if last is not None and last["timed_out"]:
        return "timeout"
    if last is not None and last.get("over_disk"):
        return "over_disk"
    if last is not None and last["exit_code"] not in (0, None):
        return "agent_exit"
    if changed is False:
        return "no_change"
    return "wrong_patch" if changed else "unclassified"


def task_class(classes: Sequence[str]) -> str | None:
    """A task's class: its most frequent agent failure (ties in AGENT_FAILURES order); solved
    when every scored trial was; for a task with no scored trial, its most frequent class of
    the others; None without trials."""
    counts = Counter(classes)
    failures = [name for name in AGENT_FAILURES if counts[name]]
    if failures:
        return max(failures, key=lambda name: counts[name])  # max keeps the first of a tie
    if counts[SOLVED]:
        return SOLVED
    others = [name for name in CLASSES if counts[name]]
    return max(others, key=lambda name: counts[name]) if others else None


def class_counts(classes: Sequence[str]) -> dict[str, int]:
    """How many trials ended in each class, in CLASSES order, classes that occur only."""
    counts = Counter(classes)
    return {name: counts[name] for name in CLASSES if counts[name]}


def pass_at_most(trials: Sequence[Observation], n: int) -> float | None:
    """Share of the scored trials solved within n attempts; None without a scored trial."""
    scored = [o for o in trials if o["status"] == SCORED]
    if not scored:
        return None
    solved = [solving_attempt(o) for o in scored]
    return sum(1 for a in solved if a is not None and a < n) / len(scored)


def ttcs_figures(trials: Sequence[Observation]) -> dict[str, Any]:
    """Median and mean TTCS over the solved trials whose time is known, saying how many solved
    trials there were and how many of them had a known time."""
    solved = [o for o in trials if solving_attempt(o) is not None]
    known = np.asarray([t for t in map(time_to_solve, solved) if t is not None], dtype=float)
    return {
        "median": float(np.median(known)) if len(known) else None,
        "mean": float(known.mean()) if len(known) else None,
        "solved": len(solved),
        "known": len(known),
    }


def attempt_figures(trials: Sequence[Observation], max_attempts: int) -> dict[str, Any]:
    """One task's (or one pool of trials') Pass@<=N for N = 1..max_attempts and its TTCS."""
    scored = [o for o in trials if o["status"] == SCORED]
    return {
        "trials": len(scored),
        "pass_at_most": {str(n): pass_at_most(scored, n) for n in range(1, max_attempts + 1)},
        "ttcs_s": ttcs_figures(scored),
    }


def attempts_summary(by_task: dict[str, list[Observation]], max_attempts: int) -> dict[str, Any]:
    """The run's attempts block: Pass@<=N per task first, then averaged over the tasks with a
    scored trial (as first exact is); the pooled share of trials beside it; TTCS over every
    solved trial of the tasks."""
    rows = [attempt_figures(trials, max_attempts) for trials in by_task.values()]
    observed = [row for row in rows if row["trials"]]
    trials = [o for group in by_task.values() for o in group if o["status"] == SCORED]
    means: dict[str, float | None] = {}
    for n in range(1, max_attempts + 1):
        values = [row["pass_at_most"][str(n)] for row in observed]
        means[str(n)] = sum(values) / len(values) if values else None
    return {
        "max_attempts": max_attempts,
        "tasks": len(observed),
        "trials": len(trials),
        "pass_at_most": means,
        "pooled_pass_at_most": {
            str(n): pass_at_most(trials, n) for n in range(1, max_attempts + 1)
        },
        "ttcs_s": ttcs_figures(trials),
    }
