"""The trajectory figures over a run's trials: requests, tool calls by kind, verification runs,
files, the time line, per-solved-task costs and the transcript checks, as the JSON report's
`trajectories` block holds them (report/trajectories.py prints them).

Every figure says how many trials it counted: a trial whose origin cannot give a figure is
left out of that figure, never counted as 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, cast

from pytest_agentbench.tasks.observation import SCORED, Observation, trial_tokens
from pytest_agentbench.trajectory.model import KINDS

COUNTS = ("requests", "side_requests", "verification_runs", "files_read", "files_written")
TIMES = ("model_s", "tools_s", "harness_s")
CHECKS = ("claimed_done_without_change", "protected_writes", "outside_workspace", "forbidden_git")


def traced(observations: Sequence[Observation]) -> list[Observation]:
    """The scored trials that carry trajectory figures."""
    return [o for o in observations if o["status"] == SCORED and "trajectory" in o]


def figures_of(observation: Observation) -> dict[str, Any]:
    """A trial's trajectory figures as plain JSON (empty when it has none)."""
    return cast(dict[str, Any], observation.get("trajectory") or {})


def _figure(values: Sequence[float | int | None]) -> dict[str, Any]:
    known = [v for v in values if v is not None]
    total = sum(known) if known else None
    return {
        "total": total,
        "per_trial": total / len(known) if known and total is not None else None,
        "trials": len(known),
    }


def check_counts(observations: Sequence[Observation]) -> dict[str, dict[str, int]]:
    """Per transcript check: the trials it flagged, of the trials it could judge."""
    counts = {}
    for name in CHECKS:
        values = [figures_of(o)["checks"].get(name) for o in traced(observations)]
        judged = [v for v in values if v is not None]
        counts[name] = {"flagged": sum(1 for v in judged if v), "trials": len(judged)}
    return counts


def time_line(observations: Sequence[Observation]) -> dict[str, Any]:
    """Where the trials' time went: model requests, the agent's tools and own work, the
    harness; shares over the trials where all three are known."""
    rows = [figures_of(o) for o in traced(observations)]
    whole = [r for r in rows if all(r.get(k) is not None for k in TIMES)]
    totals = {k: sum(float(r[k]) for r in whole) for k in TIMES}
    spent = sum(totals.values())
    return {
        **{k: _figure([r.get(k) for r in rows]) for k in TIMES},
        "shares": {k: totals[k] / spent for k in TIMES} if whole and spent else None,
        "share_trials": len(whole),
    }


def per_solved(observations: Sequence[Observation]) -> dict[str, Any]:
    """Totals over every scored trial, divided by the trials that ended exact: what one
    solved task costs in tokens, dollars, requests, rounds and tool calls (None when a
    trial's figure is unknown or nothing was solved)."""
    scored = [o for o in observations if o["status"] == SCORED]
    solved = sum(1 for o in scored if o["final_exact"])

    def ratio(values: Sequence[float | None]) -> float | None:
        if not solved or not values or None in values:
            return None
        return sum(v for v in values if v is not None) / solved

    traces = [figures_of(o) for o in scored]
    return {
        "solved": solved,
        "trials": len(scored),
        "tokens": ratio([trial_tokens(o) for o in scored]),
        "cost_usd": ratio([o["cost_usd"] for o in scored]),
        "requests": ratio([t.get("requests") if t else None for t in traces]),
        "rounds": ratio([float(len(o["rounds"])) for o in scored]),
        "tool_calls": ratio(
            [float(t["tool_calls"]["total"]) if t and t.get("tool_calls") else None for t in traces]
        ),
    }


def trajectory_block(observations: Sequence[Observation]) -> dict[str, Any] | None:
    """The `trajectories` block of one configuration (or arm); None when no trial has one."""
    rows = traced(observations)
    if not rows:
        return None
    figures = [figures_of(o) for o in rows]
    calls = [f.get("tool_calls") for f in figures]
    return {
        "trials": len(rows),
        "origins": dict(sorted(Counter(f["origin"] for f in figures).items())),
        **{name: _figure([f.get(name) for f in figures]) for name in COUNTS},
        "tool_calls": {
            kind: _figure([c.get(kind) if c else None for c in calls]) for kind in ("total", *KINDS)
        },
        "time": time_line(rows),
        "per_solved": per_solved(observations),
        "checks": check_counts(rows),
        "cut": sum(1 for f in figures if f.get("cut")),
    }


def paired_differences(
    base: Sequence[Observation], other: Sequence[Observation]
) -> dict[str, dict[str, Any]]:
    """Per-task mean differences (other - base) of requests, tool calls and rounds, over the
    tasks both sides traced: Reasonix's compare, with the count of tasks it rests on."""

    def per_task(observations: Sequence[Observation]) -> dict[str, dict[str, list[float]]]:
        table: dict[str, dict[str, list[float]]] = {}
        for obs in traced(observations):
            figures = figures_of(obs)
            values = {
                "requests": figures.get("requests"),
                "tool_calls": (figures.get("tool_calls") or {}).get("total"),
                "rounds": len(obs["rounds"]),
            }
            row = table.setdefault(obs["task"], {})
            for key, value in values.items():
                if value is not None:
                    row.setdefault(key, []).append(float(value))
        return table

    left, right = per_task(base), per_task(other)
    out = {}
    for key in ("requests", "tool_calls", "rounds"):
        diffs = [
            sum(right[t][key]) / len(right[t][key]) - sum(left[t][key]) / len(left[t][key])
            for t in sorted(left.keys() & right.keys())
            if left[t].get(key) and right[t].get(key)
        ]
        out[key] = {
            "mean_difference": sum(diffs) / len(diffs) if diffs else None,
            "tasks": len(diffs),
        }
    return out
