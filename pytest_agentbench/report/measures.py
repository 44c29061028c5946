"""The code measures' medians in words: one terminal line, and a table of one row per
configuration and figure for the Markdown report (docs/measures.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.fs.wording import plural

MEASURE_HEADERS = ["configuration", "figure", "median", "trials counted"]
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


def measure_line(block: Mapping[str, Any]) -> str:
    """The terminal's line: the run's median of the telling figures, with the trial count."""
    figures = block["figures"]
    parts = [
        f"{words} {median_text(figures[name]['median'])}"
        for name, words in TERMINAL_FIGURES.items()
        if name in figures
    ]
    counted = plural(block["trials"], "scored trial")
    return f"measures, median of {counted}: " + " · ".join(parts)


def measure_rows(named: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[str]]:
    """One row per configuration and figure: its median and how many trials knew it."""
    return [
        [name, figure, median_text(value["median"]), str(value["trials"])]
        for name, report in named
        if report.get("measures")
        for figure, value in report["measures"]["figures"].items()
    ]
