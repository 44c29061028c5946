"""CSV export: one row per trial, the Observation's scalar fields as columns.

COLUMNS is the contract with spreadsheets and scripts that read columns by position: a new
field is appended at its end, never inserted or reordered (a test pins the order). Nested
fields are flattened with a dot (tokens.input, agent.name); rounds is the number of graded
rounds; tags are joined by spaces. An unknown value is an empty cell, never 0; booleans are
true/false.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

COLUMNS = (
    "configuration",
    "task",
    "repeat",
    "status",
    "cause",
    "attempts",
    "rounds",
    "first_exact",
    "final_exact",
    "eof_normalized",
    "tokens.input",
    "tokens.cached_input",
    "tokens.output",
    "tokens.reasoning",
    "cost_usd",
    "wall_s",
    "category",
    "tags",
    "fixture_hash",
    "agent.name",
    "agent.session_id",
    "agent.model_reported",
    "agent.turns",
    "agent.tool_calls",
    "trial_id",
    "final_eof_normalized",
    "reused",
    "no_solution",
    "verdict",
    "verdict_reason",
    "trajectory.origin",
    "trajectory.requests",
    "trajectory.tool_calls.total",
    "trajectory.tool_calls.shell",
    "trajectory.tool_calls.read",
    "trajectory.tool_calls.edit",
    "trajectory.tool_calls.search",
    "trajectory.tool_calls.other",
    "trajectory.verification_runs",
    "trajectory.files_read",
    "trajectory.files_written",
    "trajectory.model_s",
    "trajectory.tools_s",
    "trajectory.harness_s",
    "trajectory.checks.claimed_done_without_change",
    "trajectory.checks.protected_writes",
    "trajectory.checks.outside_workspace",
    "trajectory.checks.forbidden_git",
)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value)


def _field(observation: dict[str, Any], column: str) -> Any:
    if column == "rounds":
        rounds = observation.get("rounds")
        return None if rounds is None else len(rounds)
    value: Any = observation
    for part in column.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def rows(document: dict[str, Any]) -> Iterator[list[str]]:
    """The header, then one row per Observation of every configuration in the document."""
    from pytest_agentbench.scoring.configurations import configurations_of

    yield list(COLUMNS)
    for report in configurations_of(document):
        run = report.get("run") or {}
        name = run.get("name") or run.get("agent")
        for observation in report["observations"]:
            yield [_cell(name)] + [_cell(_field(observation, c)) for c in COLUMNS[1:]]


def render_csv(document: dict[str, Any]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows(document))
    return out.getvalue()
