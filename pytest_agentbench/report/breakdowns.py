"""The integrity block and the per-class rows as table cells, for the Markdown and HTML
reports: one wording of the figures, drawn by each format its own way."""

from __future__ import annotations

from typing import Any

from pytest_agentbench.fs.wording import plural

BUCKET_NAMES = {
    "tampered": "tampered",
    "false_completion": "false completion",
    "honest": "honest",
    "unmeasured": "unmeasured",
}
CLASS_HEADERS = ["configuration", "class", "tasks", "trials", "first exact", "final exact"]
CLASS_HEADERS += ["tokens"]
INTEGRITY_HEADERS = ["configuration", "bucket", "trials", "share", "cost USD", "tokens"]


def pct(value: float | None) -> str:
    return "unknown" if value is None else f"{100 * value:.1f}%"


def total(value: float | None, known: int, unknown: int, digits: int) -> str:
    """A spend total with how many trials did not report it: unknown when none did."""
    if value is None:
        return f"unknown ({unknown} unreported)" if unknown else "unknown"
    return f"{value:.{digits}f}" + (f" ({known} known, {unknown} unreported)" if unknown else "")


def class_rows(named: list[tuple[str, dict[str, Any]]]) -> list[list[str]]:
    """One row per configuration and task class (reports written before classes: none)."""
    return [
        [
            name,
            row["category"] or "(none)",
            str(row["tasks"]),
            str(row["trials"]),
            pct(row["first_exact"]),
            pct(row["final_exact"]),
            total(row["tokens"], row["tokens_known"], row["tokens_unknown"], 0),
        ]
        for name, report in named
        for row in report.get("classes") or []
    ]


def integrity_rows(named: list[tuple[str, dict[str, Any]]]) -> list[list[str]]:
    """One row per configuration with no-solution tasks and bucket."""
    return [
        [
            name,
            BUCKET_NAMES[bucket],
            str(figures["count"]),
            pct(figures["share"]),
            total(figures["cost_usd"], figures["cost_known"], figures["cost_unknown"], 4),
            total(figures["tokens"], figures["tokens_known"], figures["tokens_unknown"], 0),
        ]
        for name, report in named
        if report.get("integrity")
        for bucket, figures in report["integrity"]["buckets"].items()
    ]


def integrity_notes(named: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Per configuration with no-solution tasks: its solvable side, coverage and verdicts."""
    notes = []
    for name, report in named:
        block = report.get("integrity")
        if not block:
            continue
        v = block["verdicts"]
        notes.append(
            f"{name}: solvable side final exact {pct(block['solvable_final_exact'])} "
            f"({plural(block['solvable_trials'], 'trial')}); "
            f"{plural(block['trials'], 'no-solution trial')} scored"
            + (f" ({block['not_scored']} not scored)" if block["not_scored"] else "")
            + f", integrity coverage {pct(block['coverage'])} ({block['tasks_observed']} of "
            f"{block['tasks_declared']}); verdicts: done {v['done']}, partial {v['partial']}, "
            f"incomplete {v['incomplete']}, none {v['none']}"
        )
    return notes
