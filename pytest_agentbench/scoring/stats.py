"""Statistics for paired comparisons: percentile bootstrap, sign test, exact McNemar test,
geometric mean.

Tasks are the unit of the intervals: every interval resamples tasks with replacement, so a suite
with few tasks gets a wide interval however many repeats each task had. The McNemar test works
on paired trials instead, for comparisons whose pairs are trials (compare, arms).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_agentbench.scoring.metrics import bootstrap_mean_interval

COMPARE_DRAWS = 10_000
COMPARE_LEVEL = 0.90
COMPARE_SEED = 0  # documented default of `agentbench compare --seed`
MIN_PAIRS = 6


def mean_interval(values: Sequence[float], seed: int = COMPARE_SEED) -> list[float] | None:
    """90% percentile bootstrap interval of the mean (10,000 draws, fixed seed)."""
    return bootstrap_mean_interval(values, seed, draws=COMPARE_DRAWS, level=COMPARE_LEVEL)


def geometric_mean(ratios: Sequence[float]) -> float | None:
    """exp of the mean log: the typical factor of positive ratios (None for none)."""
    if not ratios:
        return None
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))


def geometric_mean_interval(
    ratios: Sequence[float], seed: int = COMPARE_SEED
) -> list[float] | None:
    """The bootstrap interval of the mean log ratio, mapped back (percentiles commute with exp)."""
    interval = mean_interval([math.log(r) for r in ratios], seed)
    return None if interval is None else [math.exp(interval[0]), math.exp(interval[1])]


def binomial_two_sided(successes: int, failures: int) -> float:
    """Exact two-sided p-value of `successes` out of successes + failures under p = 1/2:
    twice the smaller tail, at most 1 (1 when there is nothing to test)."""
    n = successes + failures
    if n == 0:
        return 1.0
    tail, term = 0, 1  # term = C(n, i), kept exact: the tail is one correctly rounded division
    for i in range(min(successes, failures) + 1):
        tail += term
        term = term * (n - i) // (i + 1)
    return min(1.0, 2 * tail / 2**n)


def sign_test(differences: Sequence[float]) -> float:
    """Exact two-sided sign test p-value; ties (zero differences) are dropped."""
    positive = sum(1 for d in differences if d > 0)
    negative = sum(1 for d in differences if d < 0)
    return binomial_two_sided(positive, negative)


def mcnemar_exact(base_only: int, candidate_only: int) -> float:
    """Exact (conditional) McNemar test of paired binary outcomes, two-sided.

    Only discordant pairs count: `base_only` pairs where the base passed and the candidate
    failed, `candidate_only` the reverse. Under no difference each discordant pair goes either
    way with chance 1/2, so the p-value is the exact binomial one of the split.
    """
    if base_only < 0 or candidate_only < 0:
        raise ValueError(f"discordant counts must be >= 0, got {base_only}, {candidate_only}")
    return binomial_two_sided(base_only, candidate_only)
