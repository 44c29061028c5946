"""The code measures in a report (docs/measures.md): per configuration (or arm), each
figure's median over the scored trials that know it; per pair of configurations, each
figure's mean per-task difference with a bootstrap interval over tasks."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median
from typing import Any

from pytest_agentbench.scoring.stats import COMPARE_SEED, MIN_PAIRS, mean_interval
from pytest_agentbench.tasks.observation import SCORED, Observation


def _measured(observations: Sequence[Observation]) -> list[dict[str, Any]]:
    """The measures of the scored trials that carry them."""
    return [o["measures"] for o in observations if o["status"] == SCORED and o.get("measures")]


def _names(measured: Sequence[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(name for measures in measured for name in measures))


def measure_block(observations: Sequence[Observation]) -> dict[str, Any] | None:
    """{trials, figures: {name: {median, trials}}} over the scored trials that carry measures;
    a figure no trial knows has median None; None when no trial was measured."""
    measured = _measured(observations)
    if not measured:
        return None
    figures = {}
    for name in _names(measured):
        known = [value for m in measured if (value := m.get(name)) is not None]
        figures[name] = {"median": median(known) if known else None, "trials": len(known)}
    return {"trials": len(measured), "figures": figures}


def task_medians(trials: Sequence[Observation]) -> dict[str, float]:
    """One side of one task: each figure's median over its scored trials that know it (a
    figure none knows is absent)."""
    block = measure_block(trials)
    figures = block["figures"] if block else {}
    return {name: f["median"] for name, f in figures.items() if f["median"] is not None}


def paired_measures(
    pairs: Sequence[tuple[str, Sequence[Observation], Sequence[Observation]]],
    seed: int = COMPARE_SEED,
) -> dict[str, Any] | None:
    """Per figure, over the paired tasks (task id, base trials, candidate trials) where both
    sides know it: the mean of candidate median - base median, its 90% bootstrap interval over
    tasks (from MIN_PAIRS tasks on), how many tasks paired and which were left out.
    None when no trial of either side was measured."""
    measured = [m for _, base, cand in pairs for m in (*_measured(base), *_measured(cand))]
    if not measured:
        return None
    sides = [(task, task_medians(base), task_medians(cand)) for task, base, cand in pairs]
    figures = {}
    for name in _names(measured):
        differences = [c[name] - b[name] for _, b, c in sides if name in b and name in c]
        enough = len(differences) >= MIN_PAIRS
        figures[name] = {
            "tasks": len(differences),
            "point": sum(differences) / len(differences) if differences else None,
            "interval": mean_interval(differences, seed) if enough else None,
            "note": None if enough else f"too few tasks ({len(differences)} < {MIN_PAIRS})",
            "left_out": [task for task, b, c in sides if name not in b or name not in c],
        }
    return {"tasks": len(pairs), "figures": figures}
