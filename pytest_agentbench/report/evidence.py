"""The notes every report format prints beside a configuration's figures: what it declared
but did not select, which trials it did not score and why, why it stopped, why it is not
ranked, and which tasks it could not score."""

from __future__ import annotations

from typing import Any

from pytest_agentbench.fs.wording import plural


def _causes(counts: dict[str, int] | None) -> str:
    return f" ({', '.join(f'{cause} {n}' for cause, n in counts.items())})" if counts else ""


NOT_SCORED = (
    ("provider stops", "provider_stops", "provider_stop_causes"),
    ("infrastructure failures", "infrastructure_failures", "infrastructure_causes"),
    ("harness errors", "errors", ""),
    ("not started (budget)", "budget_exhausted", ""),
    ("not started (breaker)", "breaker_open", ""),
    ("not started (interrupted)", "interrupted", ""),
)


def not_scored_lines(s: dict[str, Any]) -> list[str]:
    """The trials of each outcome class besides scored, with their causes, and the attempts
    run again after an infrastructure failure (metrics.outcome_counts). A summary written
    before a class existed has no count for it: nothing is said."""
    parts = [
        f"{label} {s[key]}" + _causes(s.get(causes))
        for label, key, causes in NOT_SCORED
        if s.get(key)
    ]
    lines = [f"not scored: {', '.join(parts)}"] if parts else []
    if s.get("infra_retries"):
        lines.append(
            f"run again after an infrastructure failure: {plural(s['infra_retries'], 'attempt')}"
            + _causes(s.get("infra_retry_causes"))
            + ", kept as evidence in its trial's attempt-N/"
        )
    return lines


def evidence_lines(report: dict[str, Any]) -> list[str]:
    """A narrowed selection, the trials not scored, a stop by the breaker, a quarantine and
    each fixture conflict, one line apiece."""
    s, run = report["summary"], report["run"]
    lines = []
    selected = s.get("tasks_selected")
    if selected is not None and selected < s["tasks_declared"]:
        lines.append(
            f"{selected} of {plural(s['tasks_declared'], 'declared task')} selected; "
            "score counts the declared set"
        )
    lines += not_scored_lines(s)
    breaker = run.get("breaker") or {}
    if breaker.get("open"):
        lines.append(f"stopped by the breaker: {breaker['reason']}")
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


def pool_lines(pool: list[dict[str, Any]] | None) -> list[str]:
    """A pool of Docker engines (--docker-host), one line an engine: its slots, trials and
    engine failures, and why it is down if it is (sandbox/placement.py's state, as
    pool_engines lists it)."""
    if not pool:
        return []
    lines = ["engines:"]
    for engine in pool:
        line = (
            f"  {engine['name']}: {engine['slots']} slots, {plural(engine['trials'], 'trial')}"
            f" placed, {plural(engine['failures'], 'engine failure')}"
        )
        if engine.get("running"):
            line += f", {engine['running']} running"
        if engine.get("down"):
            line += f"; DOWN for the rest of the run: {engine['down']}"
        lines.append(line)
    return lines
