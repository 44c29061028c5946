"""The judges' statistics: Wilson intervals of win rates, Bradley-Terry strengths with
bootstrap intervals, and Cohen's kappa between two judges (docs/judges.md).

Intervals are at the level `agentbench compare` uses (scoring/stats.py), so a report's
intervals all mean the same.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from pytest_agentbench.scoring.stats import COMPARE_LEVEL, COMPARE_SEED

BT_DRAWS = 1000
BT_ITERATIONS = 500
BT_TOLERANCE = 1e-10


def wilson_interval(successes: int, n: int, level: float = COMPARE_LEVEL) -> list[float] | None:
    """Wilson score interval of a proportion successes / n; None for n = 0.

    With p = successes / n and z the normal quantile of the two-sided level:
    (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n).
    """
    if n == 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, {n}], got {successes}")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # At 0 or n successes the bound is exactly 0 or 1 (centre = half there); rounding would
    # otherwise leave it a hair off and the interval not holding the rate.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return [low, high]


Outcome = tuple[int, int, float]  # (side i, side j, i's score: 1 win, 0.5 tie, 0 loss)


def bradley_terry(outcomes: Sequence[Outcome], sides: int) -> list[float | None]:
    """Bradley-Terry strengths by Hunter's MM iteration, summing to 1 over the sides that
    were compared (a tie is half a win to each); None for a side never compared."""
    wins = np.zeros(sides)
    games = np.zeros((sides, sides))
    for i, j, score in outcomes:
        wins[i] += score
        wins[j] += 1 - score
        games[i, j] += 1
        games[j, i] += 1
    compared = games.sum(axis=1) > 0
    strength = np.where(compared, 1.0 / max(1, int(compared.sum())), 0.0)
    for _ in range(BT_ITERATIONS):
        pair_sums = strength[:, None] + strength[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            rates = np.where(games > 0, games / np.where(pair_sums > 0, pair_sums, 1), 0.0)
        denominators = rates.sum(axis=1)
        updated = np.where(
            compared & (denominators > 0), wins / np.maximum(denominators, 1e-300), 0
        )
        total = updated.sum()
        if total <= 0:
            break
        updated = updated / total
        done = float(np.abs(updated - strength).max()) < BT_TOLERANCE
        strength = updated
        if done:
            break
    return [float(strength[k]) if compared[k] else None for k in range(sides)]


def bradley_terry_intervals(
    outcomes: Sequence[Outcome], sides: int, seed: int = COMPARE_SEED
) -> list[list[float] | None]:
    """Percentile bootstrap intervals of the strengths, resampling the judged pairs."""
    if not outcomes:
        return [None] * sides
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(BT_DRAWS):
        picked = rng.integers(0, len(outcomes), size=len(outcomes))
        strengths = bradley_terry([outcomes[k] for k in picked], sides)
        draws.append([math.nan if s is None else s for s in strengths])
    table = np.asarray(draws)
    tail = (1 - COMPARE_LEVEL) / 2 * 100
    intervals: list[list[float] | None] = []
    for k in range(sides):
        column = table[:, k][~np.isnan(table[:, k])]
        if len(column) == 0:
            intervals.append(None)
            continue
        low, high = np.percentile(column, [tail, 100 - tail])
        intervals.append([float(low), float(high)])
    return intervals


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters' labels on the same items; None when there are no items
    or chance agreement is already total (both always gave one same label)."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(1 for a, b in pairs if a == b) / n
    labels = {label for pair in pairs for label in pair}
    chance = sum(
        (sum(1 for a, _ in pairs if a == label) / n) * (sum(1 for _, b in pairs if b == label) / n)
        for label in labels
    )
    if chance >= 1:
        return None
    return (observed - chance) / (1 - chance)
