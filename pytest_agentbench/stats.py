"""Statistics for paired comparisons over tasks: percentile bootstrap, sign test, geometric mean.

Tasks are the unit: every interval resamples tasks with replacement, so a suite with few tasks
gets a wide interval however many repeats each task had.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_agentbench.metrics import bootstrap_mean_interval

COMPARE_DRAWS = 10_000
COMPARE_LEVEL = 0.90
COMPARE_SEED = 20240611
MIN_PAIRS = 6


def mean_interval(values: Sequence[float], seed: int = COMPARE_SEED) -> list[float] | None:
    """90% percentile bootstrap interval of the mean (10,000 draws, fixed seed)."""
    return bootstrap_mean_interval(values, seed, draws=COMPARE_DRAWS, level=COMPARE_LEVEL)


def geometric_mean(ratios: Sequence[float]) -> float | None:
    if not ratios:
        return None
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))


def geometric_mean_interval(
    ratios: Sequence[float], seed: int = COMPARE_SEED
) -> list[float] | None:
    """The bootstrap interval of the mean log ratio, mapped back (percentiles commute with exp)."""
    interval = mean_interval([math.log(r) for r in ratios], seed)
    return None if interval is None else [math.exp(interval[0]), math.exp(interval[1])]


def sign_test(differences: Sequence[float]) -> float:
    """Exact two-sided sign test p-value; ties (zero differences) are dropped."""
    positive = sum(1 for d in differences if d > 0)
    negative = sum(1 for d in differences if d < 0)
    n = positive + negative
    if n == 0:
        return 1.0
    k = min(positive, negative)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)
