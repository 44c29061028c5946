"""The code measures in words (docs/measures.md): the medians as one terminal line and a table
of one row per configuration and figure; the paired differences (candidate - base) likewise."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.fs.wording import plural

MEASURE_HEADERS = ["configuration", "figure", "median", "trials counted"]
PAIRED_MEASURE_HEADERS = ["pair", "figure", "mean difference", "90% CI", "tasks"]
TERMINAL_FIGURES = {
    "files_touched": "files",
    "lines_added": "lines added",
    "lines_removed": "removed",
    "test_lines_added": "test lines added",
    "complexity_added": "complexity added",
    "dead_code_added": "dead code added",
    "lines_added_ratio": "lines added to the reference's",
}
"""The figures the terminal line shows, with their words; the tables show every figure."""


def median_text(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"{value:g}" if float(value).is_integer() else f"{value:.2f}"


def difference_text(value: float | None) -> str:
    """A signed difference: +3, -0.50, unknown."""
    if value is None:
        return "unknown"
    shown = median_text(value)
    return shown if value < 0 else f"+{shown}"


def interval_text(figure: Mapping[str, Any]) -> str:
    pair = figure["interval"]
    if pair is None:
        return "too few tasks" if figure["tasks"] else "no task pairs"
    return f"[{difference_text(pair[0])}, {difference_text(pair[1])}]"


def measure_line(block: Mapping[str, Any], label: str = "measures") -> str:
    """The terminal's line: the median of the telling figures, with the trial count."""
    figures = block["figures"]
    parts = [
        f"{words} {median_text(figures[name]['median'])}"
        for name, words in TERMINAL_FIGURES.items()
        if name in figures
    ]
    counted = plural(block["trials"], "scored trial")
    return f"{label}, median of {counted}: " + " · ".join(parts)


def paired_measure_line(block: Mapping[str, Any], label: str) -> str:
    """The telling figures' mean per-task differences in one line; a figure paired on fewer
    tasks than the block says how many."""
    figures, tasks = block["figures"], block["tasks"]
    parts = []
    for name, words in TERMINAL_FIGURES.items():
        if name in figures:
            figure = figures[name]
            fewer = f" ({plural(figure['tasks'], 'task')})" if figure["tasks"] != tasks else ""
            parts.append(f"{words} {difference_text(figure['point'])}{fewer}")
    over = plural(tasks, "task")
    return f"{label} measures, mean difference over {over}: " + " · ".join(parts)


def measure_rows(named: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[str]]:
    """One row per configuration and figure: its median and how many trials knew it."""
    return [
        [name, figure, median_text(value["median"]), str(value["trials"])]
        for name, report in named
        if report.get("measures")
        for figure, value in report["measures"]["figures"].items()
    ]


def paired_measure_rows(named: Sequence[tuple[str, Mapping[str, Any] | None]]) -> list[list[str]]:
    """One row per pair and figure: the mean per-task difference, its interval, tasks paired."""
    return [
        [name, figure, difference_text(value["point"]), interval_text(value), str(value["tasks"])]
        for name, block in named
        if block
        for figure, value in block["figures"].items()
    ]
