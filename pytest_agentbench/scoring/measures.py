"""The `measures` block of one configuration (or arm): per code measure figure, its median
over the scored trials that know it, and how many those are (docs/measures.md)."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median
from typing import Any

from pytest_agentbench.tasks.observation import SCORED, Observation


def measure_block(observations: Sequence[Observation]) -> dict[str, Any] | None:
    """{trials, figures: {name: {median, trials}}} over the scored trials that carry measures;
    a figure no trial knows has median None; None when no trial was measured."""
    measured = [o["measures"] for o in observations if o["status"] == SCORED and o.get("measures")]
    if not measured:
        return None
    names = list(dict.fromkeys(name for measures in measured for name in measures))
    figures = {}
    for name in names:
        known = [value for m in measured if (value := m.get(name)) is not None]
        figures[name] = {"median": median(known) if known else None, "trials": len(known)}
    return {"trials": len(measured), "figures": figures}
