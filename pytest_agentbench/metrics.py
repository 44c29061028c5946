"""Pure metric functions over Observations. Rates are per task first, then averaged.

Vectorised with numpy so that reporting stays flat as suites grow; the formulas are in
docs/metrics.md and are checked against brute-force definitions by property tests.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_agentbench.observation import Observation, Outcome

Z95 = 1.959963984540054
BOOTSTRAP_DRAWS = 2000


def flip_rate(n: int, c: int) -> float | None:
    """Chance that two distinct trials of the task disagree: 2c(n-c)/(n(n-1)); n >= 2."""
    return 2 * c * (n - c) / (n * (n - 1)) if n >= 2 else None


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Chance that at least one of k trials drawn without replacement passes."""
    if n < k or k < 1:
        return None
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """Chance that all of k trials drawn without replacement pass."""
    if n < k or k < 1:
        return None
    return math.comb(c, k) / math.comb(n, k)


def wilson_interval(successes: int, trials: int, z: float = Z95) -> list[float] | None:
    """Wilson score interval for a binomial proportion (95% by default)."""
    if trials == 0:
        return None
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return [low, high]


def bootstrap_mean_interval(
    values: Sequence[float], seed: int, draws: int = BOOTSTRAP_DRAWS, level: float = 0.95
) -> list[float] | None:
    """Percentile bootstrap interval of the mean, resampling the values (tasks) with replacement."""
    if len(values) == 0:
        return None
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    indexes = rng.integers(0, len(data), size=(draws, len(data)))
    means = data[indexes].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return [float(low), float(high)]


def describe(values: Iterable[float | None]) -> dict[str, Any]:
    """median, mean and coefficient of variation over known values; says how many were known."""
    items = list(values)
    known = np.asarray([v for v in items if v is not None], dtype=float)
    missing = len(items) - len(known)
    if len(known) == 0:
        return {"median": None, "mean": None, "cv": None, "known": 0, "missing": missing}
    mean = float(known.mean())
    cv = float(known.std(ddof=1) / mean) if len(known) > 1 and mean else None
    return {
        "median": float(np.median(known)),
        "mean": mean,
        "cv": cv,
        "known": len(known),
        "missing": missing,
    }


def trial_tokens(observation: Observation) -> float | None:
    """Total tokens of a trial (input incl. cached + output incl. reasoning), or None."""
    tokens = observation.get("tokens")
    if not tokens:
        return None
    given, produced = tokens.get("input"), tokens.get("output")
    return None if given is None or produced is None else float(given + produced)


@dataclass
class TaskCounts:
    """Per-task tallies of scored trials, in declared-task order."""

    ids: list[str]
    n: np.ndarray
    first: np.ndarray
    final: np.ndarray
    eof: np.ndarray


def count_by_task(task_ids: Sequence[str], scored: Sequence[Observation]) -> TaskCounts:
    index = {task_id: i for i, task_id in enumerate(task_ids)}
    positions = np.fromiter((index[o["task"]] for o in scored), dtype=np.int64, count=len(scored))
    size = len(task_ids)

    def tally(key: Outcome) -> np.ndarray:
        weights = np.fromiter((float(o[key]) for o in scored), dtype=float, count=len(scored))
        return np.bincount(positions, weights=weights, minlength=size).astype(np.int64)

    n = np.bincount(positions, minlength=size).astype(np.int64)
    return TaskCounts(
        list(task_ids), n, tally("first_exact"), tally("final_exact"), tally("eof_normalized")
    )


def summarize(
    declared: Sequence[str],
    observations: Sequence[Observation],
    k: int,
    seed: int,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The summary and per-task figures of one configuration.

    Only scored trials count; provider stops and errors are reported by count.
    """
    ids = list(dict.fromkeys([*declared, *(o["task"] for o in observations)]))
    scored = [o for o in observations if o["status"] == "scored"]
    counts = count_by_task(ids, scored)
    observed = counts.n > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        first_rate = np.where(observed, counts.first / np.maximum(counts.n, 1), np.nan)
        final_rate = np.where(observed, counts.final / np.maximum(counts.n, 1), np.nan)
        eof_rate = np.where(observed, counts.eof / np.maximum(counts.n, 1), np.nan)

    per_task: list[dict[str, Any]] = []
    flips: list[float] = []
    at_k: list[float] = []
    hat_k: list[float] = []
    for i, task_id in enumerate(ids):
        n, c = int(counts.n[i]), int(counts.first[i])
        flip, pk, phk = flip_rate(n, c), pass_at_k(n, c, k), pass_hat_k(n, c, k)
        for bucket, value in ((flips, flip), (at_k, pk), (hat_k, phk)):
            if value is not None:
                bucket.append(value)
        per_task.append(
            {
                "id": task_id,
                "trials": n,
                "first_exact": None if n == 0 else float(first_rate[i]),
                "final_exact": None if n == 0 else float(final_rate[i]),
                "eof_normalized": None if n == 0 else float(eof_rate[i]),
                "flip_rate": flip,
                "pass_at_k": pk,
                "pass_hat_k": phk,
            }
        )

    tasks_observed = int(observed.sum())
    first = _mean(first_rate[observed])
    final = _mean(final_rate[observed])
    quality = None if first is None or final is None else 0.75 * first + 0.25 * final
    coverage = tasks_observed / len(declared) if declared else None
    summary: dict[str, Any] = {
        "tasks_declared": len(declared),
        "tasks_observed": tasks_observed,
        "trials": len(scored),
        "provider_stops": sum(1 for o in observations if o["status"] == "provider_stop"),
        "errors": sum(1 for o in observations if o["status"] == "error"),
        "budget_exhausted": sum(1 for o in observations if o["status"] == "budget_exhausted"),
        "first_exact": first,
        "final_exact": final,
        "eof_normalized": _mean(eof_rate[observed]),
        "quality": quality,
        "coverage": coverage,
        "score": None if quality is None or coverage is None else quality * coverage,
        "flip_rate": _mean(np.asarray(flips)),
        "flip_rate_tasks": len(flips),
        "flaky_tasks": _mean(((counts.first > 0) & (counts.first < counts.n))[observed]),
        "k": k,
        "pass_at_k": _mean(np.asarray(at_k)),
        "pass_hat_k": _mean(np.asarray(hat_k)),
        "pass_k_tasks": len(at_k),
        "first_exact_ci": wilson_interval(int(counts.first.sum()), len(scored)),
        "task_bootstrap_ci": bootstrap_mean_interval(list(first_rate[observed]), seed),
        "tokens": describe(trial_tokens(o) for o in scored),
        "cost_usd": describe(o.get("cost_usd") for o in scored),
        "wall_s": describe(o.get("wall_s") for o in scored),
    }
    return summary, per_task


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if len(values) else None
