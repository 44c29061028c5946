"""The metering readout: the `metering` block (scoring/metering.py) in the JSON report and the
terminal. Registered on the controller for codex, claude and opencode runs unless
--agentbench-meter=off; a run whose CLI could not be metered gets one line saying why."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from pytest_agentbench.fs.wording import plural
from pytest_agentbench.meter.records import FIELDS
from pytest_agentbench.scoring.metering import metering_block


def _count(value: int | None) -> str:
    return "unknown" if value is None else str(value)


def _pct(value: float | None) -> str:
    return "unknown" if value is None else f"{value:+.2%}"


def metering_lines(block: Mapping[str, Any]) -> list[str]:
    lines = []
    for name, entry in block.items():
        if not entry["metered_trials"]:
            why = entry.get("unmetered_reason") or "no API key, or an account login"
            lines.append(
                f"meter: {name} ran unmetered ({plural(entry['trials'], 'trial')}): {why}; "
                "its tokens are its own report"
            )
            continue
        tokens = entry["tokens"]
        shown = ", ".join(
            f"{field} {'unknown' if tokens[field] is None else tokens[field]}" for field in FIELDS
        )
        lines.append(
            f"metered {name}: {entry['metered_trials']}/{plural(entry['trials'], 'trial')}, "
            f"{plural(entry['requests'], 'request')}; {shown}"
        )
        if entry["metered_trials"] < entry["trials"]:
            lines.append(
                f"  {plural(entry['trials'] - entry['metered_trials'], 'trial')} ran unmetered "
                f"({entry.get('unmetered_reason') or 'no API key, or an account login'})"
            )
        share = entry["cache_hit_share"]
        side = entry["side_tokens"]
        lines.append(
            f"  cache-hit share {'unknown' if share is None else f'{share:.1%}'}; "
            f"side requests (no tools, not in the divergence) {entry['side_requests']}: "
            + ", ".join(f"{f} {_count(side[f])}" for f in ("input", "output"))
        )
        for field, div in entry["divergence"].items():
            flag = "  <-- over 1%" if div["flagged"] else ""
            lines.append(
                f"  self-report divergence {field}: {_pct(div['value'])} "
                f"over {plural(div['trials'], 'trial')}{flag}"
            )
        faults = entry["faults"]
        if faults["faulted_trials"]:
            rate = faults["control_solve_rate"]
            lines.append(
                f"  faults: {plural(faults['faulted_trials'], 'trial')} met one; retried "
                f"{faults['retried']}, still solved {faults['still_solved']}; in-run control "
                f"{'unknown' if rate is None else f'{rate:.0%}'} solved of "
                f"{faults['control_trials']}"
            )
    return lines


class MeterReadout:
    """Adds the `metering` block to the JSON report; the terminal summary prints it within the
    agentbench block (report/terminal.py)."""

    def pytest_agentbench_report_json(self, config: pytest.Config, report: dict[str, Any]) -> None:
        run = report.get("run") or {}
        report["metering"] = metering_block(report.get("observations") or [], run.get("agent_info"))
