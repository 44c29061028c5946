"""The legs block in words: one row per leg of the segmented trials, and the degradation line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_agentbench.fs.wording import plural
from pytest_agentbench.report.table import format_table

LEG_HEADERS = ["leg", "prompt", "trials", "exact after", "tokens", "requests", "wall s"]


def _mean(figure: Mapping[str, Any], digits: int = 0) -> str:
    if figure["mean"] is None:
        return "unknown"
    return f"{figure['mean']:,.{digits}f} ({figure['counted']})"


def _ratio(figure: Mapping[str, Any], noun: str) -> str:
    if figure["ratio"] is None:
        return f"{noun} unknown"
    return f"{noun} x{figure['ratio']:.2f} ({plural(figure['counted'], 'trial')})"


def legs_lines(block: Mapping[str, Any]) -> list[str]:
    """The table (means, with the trials each counted) and what changed from first to last."""
    rows = [
        [
            str(row["leg"]),
            "/".join(row["prompts"]) or "-",
            str(row["trials"]),
            "-"
            if row["exact_rate"] is None
            else f"{row['exact']} ({100 * row['exact_rate']:.0f}%)",
            _mean(row["tokens"]),
            _mean(row["requests"], 1),
            _mean(row["wall_s"], 1),
        ]
        for row in block["legs"]
    ]
    degradation = block["degradation"]
    line = (
        f"across legs: {degradation['regressed']} exact after an earlier leg but not after "
        f"the last; {degradation['ended_early']} ended by a failed leg; last leg to first: "
        + ", ".join(
            (
                _ratio(degradation["tokens_last_to_first"], "tokens"),
                _ratio(degradation["wall_last_to_first"], "wall"),
            )
        )
    )
    head = f"legs of {plural(block['trials'], 'segmented trial')} (means, trials counted):"
    return [head, *format_table(LEG_HEADERS, rows, right=set(range(2, 7))), line]
