"""The notes every report format prints beside a configuration's figures: what it declared
but did not select, why it is not ranked, and which tasks it could not score."""

from __future__ import annotations

from typing import Any

from pytest_agentbench.fs.wording import plural


def evidence_lines(report: dict[str, Any]) -> list[str]:
    """A narrowed selection, a quarantine and each fixture conflict, one line apiece."""
    s, run = report["summary"], report["run"]
    lines = []
    selected = s.get("tasks_selected")
    if selected is not None and selected < s["tasks_declared"]:
        lines.append(
            f"selected {selected} of {plural(s['tasks_declared'], 'declared task')}: "
            "coverage counts the declared ones"
        )
    if run.get("quarantined"):
        lines.append(f"quarantined, not ranked: {run['quarantine']['reason']}")
    for conflict in report.get("conflicts") or []:
        cells = ", ".join(
            f"fixture {(cell['fixture_hash'] or 'unknown')[:12]}: "
            f"{plural(cell['trials'], 'trial')} {cell['outcomes']}"
            for cell in conflict["cells"]
        )
        lines.append(f"fixture conflict in {conflict['id']} ({cells}): not scored")
    return lines
