"""The gates' verdicts as text and Markdown, from the gates block compare writes to JSON: per
section (all tasks, then each split) a measure table of the values each gate read, a line per
gate, and the missing values with their reasons, so one task cannot move a verdict unseen."""

from __future__ import annotations

from typing import Any

from pytest_agentbench.fs.wording import plural
from pytest_agentbench.report.markdown import markdown_table
from pytest_agentbench.report.table import format_table

ALL = "all"


def _number(value: Any) -> str:
    return "-" if value is None else f"{value:.4g}"


def _cell(values: dict[str, Any]) -> str:
    """One task's values under one gate: candidate / comparator."""
    if "passes" in values:
        c, a = values["passes"]
        unknown = values["unknown"]
        shown = f"{c}/{a} of {values['attempts'][0]}/{values['attempts'][1]}"
        return shown + (f" ({unknown[0]}/{unknown[1]} unknown)" if any(unknown) else "")
    text = f"{_number(values['candidate'])}/{_number(values['comparator'])}"
    if "reference" in values:
        ratios = values.get("ratios")
        if ratios:
            text = f"{_number(ratios[0])}/{_number(ratios[1])}"
        text += f" ref {_number(values['reference'])}"
    return text


def measure_rows(section: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The measure table: a row per task, a column per gate that reads per-task values."""
    shown = [r for r in section["results"] if r["values"]]
    tasks = sorted({task for r in shown for task in r["values"]})
    headers = ["task", *(f"{r['gate']} c/a" for r in shown)]
    rows = [
        [task, *(_cell(r["values"][task]) if task in r["values"] else "-" for r in shown)]
        for task in tasks
    ]
    return headers, rows


def _missing(section: dict[str, Any]) -> list[str]:
    return [
        f"{m['task']} ({r['gate']}, {m['side']}): {m['reason']}"
        for r in section["results"]
        for m in r["missing"]
    ]


def _title(section: dict[str, Any]) -> str:
    which = "all tasks" if section["split"] == ALL else f"split {section['split']}"
    return f"gates on {which} ({plural(len(section['tasks']), 'task')})"


def _verdict(result: dict[str, Any]) -> str:
    return "FAIL" if result["verdict"] == "fail" else str(result["verdict"])


def gates_text(block: dict[str, Any]) -> list[str]:
    """Terminal lines; each gate's line reads `gate NAME[ [split]]: verdict: detail`."""
    lines: list[str] = []
    for section in block["sections"]:
        where = "" if section["split"] == ALL else f" [{section['split']}]"
        lines += ["", _title(section)]
        headers, rows = measure_rows(section)
        if rows and len(headers) > 1:
            lines += format_table(headers, rows)
        lines += [
            f"gate {r['gate']}{where}: {_verdict(r)}: {r['detail']}" for r in section["results"]
        ]
        missing = _missing(section)
        if missing:
            lines += ["Missing values:", *(f"  {line}" for line in missing)]
    return [*lines, f"gates: {block['verdict']} (exit {block['exit']})"]


def gates_markdown(block: dict[str, Any]) -> str:
    """The same as Markdown, for a CI job summary."""
    lines = [f"## Gates: {block['verdict']} (exit {block['exit']})"]
    for section in block["sections"]:
        lines += ["", f"### {_title(section)}", ""]
        headers, rows = measure_rows(section)
        if rows and len(headers) > 1:
            lines += [*markdown_table(headers, rows), ""]
        results = [[r["gate"], _verdict(r), r["against"], r["detail"]] for r in section["results"]]
        lines += markdown_table(["gate", "verdict", "against", "detail"], results)
        missing = _missing(section)
        if missing:
            lines += ["", "#### Missing values", "", *(f"- {line}" for line in missing)]
    return "\n".join(lines) + "\n"
