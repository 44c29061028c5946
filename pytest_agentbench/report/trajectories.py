"""The trajectory lines of the terminal summary: what the agent did (requests, tool calls by
kind, its own test runs), where the time went, what a solved task cost, and the transcript
checks; from the report's `trajectories` block (scoring/trajectories.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.fs.wording import plural
from pytest_agentbench.trajectory.model import KINDS

CHECK_NAMES = {
    "claimed_done_without_change": "claimed done without a change",
    "protected_writes": "wrote a protected path",
    "outside_workspace": "reached outside the workspace",
    "forbidden_git": "ran git where the prompt forbids it",
}


def _per_trial(figure: Mapping[str, Any]) -> str:
    value = figure.get("per_trial")
    return "unknown" if value is None else f"{value:.1f}"


def _amount(value: float | None, digits: int = 0, prefix: str = "") -> str:
    return "unknown" if value is None else f"{prefix}{value:,.{digits}f}"


def activity_line(block: Mapping[str, Any]) -> str:
    """Per trial: requests, tool calls by kind, test runs, files; from which sources."""
    calls = block["tool_calls"]
    kinds = ", ".join(f"{kind} {_per_trial(calls[kind])}" for kind in KINDS if calls[kind]["total"])
    origins = ", ".join(f"{count} {name}" for name, count in block["origins"].items())
    requests = block["requests"]
    known = "" if requests["trials"] == block["trials"] else f" (of {requests['trials']})"
    return (
        f"trajectories ({origins}), a trial: {_per_trial(requests)} requests{known}, "
        f"{_per_trial(calls['total'])} tool calls ({kinds or 'none'}), "
        f"{_per_trial(block['verification_runs'])} test runs, files read "
        f"{_per_trial(block['files_read'])}, written {_per_trial(block['files_written'])}"
    )


def time_line(block: Mapping[str, Any]) -> str:
    time = block["time"]
    shares = time["shares"]
    parts = []
    for key, name in (("model_s", "model"), ("tools_s", "tools"), ("harness_s", "harness")):
        total = time[key]["total"]
        share = f"{shares[key]:.0%} " if shares else ""
        parts.append(f"{name} {share}({_amount(total, 1)} s)")
    counted = f"{time['share_trials']} of {plural(block['trials'], 'trial')}"
    if not shares:
        return f"time: {' · '.join(parts)}; model time is known only where metered or simulated"
    return f"time: {' · '.join(parts)} [{counted}]"


def solved_line(block: Mapping[str, Any]) -> str:
    solved = block["per_solved"]
    return (
        f"per solved task ({solved['solved']} solved of {plural(solved['trials'], 'trial')}): "
        f"{_amount(solved['tokens'])} tokens · {_amount(solved['cost_usd'], 4, '$')} · "
        f"{_amount(solved['requests'], 1)} requests · {_amount(solved['rounds'], 1)} rounds · "
        f"{_amount(solved['tool_calls'], 1)} tool calls"
    )


def checks_line(checks: Mapping[str, Mapping[str, int]]) -> str:
    shown = [
        f"{CHECK_NAMES[name]} {entry['flagged']}/{entry['trials']}"
        for name, entry in checks.items()
        if entry["trials"]
    ]
    return "transcript checks: " + " · ".join(shown)


def paired_trajectory_text(differences: Mapping[str, Any]) -> str:
    """The paired per-task mean differences in requests, tool calls and rounds, with the
    tasks each rests on; empty when no task was traced on both sides."""
    if not any(entry["tasks"] for entry in differences.values()):
        return ""
    parts = []
    for key in ("requests", "tool_calls", "rounds"):
        entry = differences[key]
        value = entry["mean_difference"]
        shown = "unknown" if value is None else f"{value:+.2f}"
        parts.append(f"{key.replace('_', ' ')} {shown} ({entry['tasks']})")
    return "per task: " + ", ".join(parts)


def trajectory_lines(block: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
    """(head, rows): what the agents did and where the time went always show; what a solved
    task cost, the checks and the cut follow as the screen allows."""
    if not block:
        return [], []
    rows = [solved_line(block), checks_line(block["checks"])]
    if block["cut"]:
        rows.append(
            f"  raw evidence cut at --agentbench-raw-limit in {plural(block['cut'], 'trial')}"
        )
    return [activity_line(block), time_line(block)], rows


TRAJECTORY_HEADERS = [
    "configuration",
    "trials",
    "origins",
    "requests",
    "tool calls",
    *KINDS,
    "test runs",
    "files read",
    "written",
    "model s",
    "tools s",
    "harness s",
    "tokens / solved",
    "USD / solved",
    "claimed done, no change",
]
"""The per-configuration table of the HTML and Markdown reports: figures per trial, time in
totals, costs per solved task."""


def trajectory_rows(named: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[str]]:
    rows = []
    for name, report in named:
        block = report.get("trajectories")
        if not block:
            continue
        calls, time, solved = block["tool_calls"], block["time"], block["per_solved"]
        claimed = block["checks"]["claimed_done_without_change"]
        rows.append(
            [
                name,
                str(block["trials"]),
                ", ".join(f"{count} {origin}" for origin, count in block["origins"].items()),
                _per_trial(block["requests"]),
                _per_trial(calls["total"]),
                *(_per_trial(calls[kind]) for kind in KINDS),
                _per_trial(block["verification_runs"]),
                _per_trial(block["files_read"]),
                _per_trial(block["files_written"]),
                *(_amount(time[key]["total"], 1) for key in ("model_s", "tools_s", "harness_s")),
                _amount(solved["tokens"]),
                _amount(solved["cost_usd"], 4),
                f"{claimed['flagged']}/{claimed['trials']}",
            ]
        )
    return rows
