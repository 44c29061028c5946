"""The comparison statistics agree with brute-force definitions on small inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.scoring.stats import (
    geometric_mean,
    geometric_mean_interval,
    mcnemar_exact,
    mean_interval,
    sign_test,
)

differences = st.lists(st.sampled_from([-1.0, -0.5, 0.0, 0.25, 1.0]), max_size=10)


@given(differences)
def test_sign_test_equals_the_share_of_sign_patterns_at_least_as_extreme(values):
    nonzero = [v for v in values if v != 0]
    n = len(nonzero)
    observed = min(sum(v > 0 for v in nonzero), sum(v < 0 for v in nonzero))
    extreme = sum(
        1
        for signs in itertools.product((1, -1), repeat=n)
        if min(signs.count(1), signs.count(-1)) <= observed
    )
    assert math.isclose(sign_test(values), extreme / 2**n if n else 1.0)


@settings(deadline=None)
@given(st.integers(0, 7), st.integers(0, 7))
def test_mcnemar_equals_the_share_of_discordant_splits_at_least_as_extreme(base_only, cand_only):
    """Under no difference each discordant pair is base-only or candidate-only with chance 1/2:
    enumerate every split of the n pairs and count those at least as lopsided as observed."""
    n = base_only + cand_only
    observed = min(base_only, cand_only)
    extreme = sum(
        1
        for split in itertools.product((0, 1), repeat=n)
        if min(sum(split), n - sum(split)) <= observed
    )
    assert math.isclose(mcnemar_exact(base_only, cand_only), extreme / 2**n if n else 1.0)
    assert mcnemar_exact(base_only, cand_only) == mcnemar_exact(cand_only, base_only)


def test_mcnemar_matches_published_values() -> None:
    # Fagerland, Lydersen & Laake (2013), BMC Med Res Methodol 13:91, Table 1 (Bentur et al.):
    # discordant pairs 1 and 7, exact conditional McNemar p = 0.070
    assert round(mcnemar_exact(1, 7), 3) == 0.070
    assert mcnemar_exact(1, 7) == 18 / 256
    # a sign test textbook case: 9 of 10 non-zero differences positive, two-sided p = 0.0215
    assert round(mcnemar_exact(9, 1), 4) == 0.0215 == round(sign_test([1.0] * 9 + [-2.0]), 4)
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(4, 4) == 1.0
    with pytest.raises(ValueError, match="discordant counts must be >= 0"):
        mcnemar_exact(-1, 3)


@pytest.mark.parametrize(
    ("ratios", "expected"),
    [
        ([2.0, 8.0], 4.0),
        ([1.0, 10.0, 100.0], 10.0),
        ([0.5, 2.0], 1.0),
        ([3.0], 3.0),
        ([0.25, 0.5, 1.0, 2.0, 4.0, 8.0], 2**0.5),
        ([1.0, 3.0, 9.0, 27.0], 27**0.5),
    ],
)
def test_geometric_mean_of_known_values(ratios: list[float], expected: float) -> None:
    assert math.isclose(geometric_mean(ratios), expected, rel_tol=1e-12)


def test_geometric_mean_of_nothing_is_unknown() -> None:
    assert geometric_mean([]) is None


def exact_quantile(values: list[float], q: float) -> float:
    """The q-quantile of the mean over every equally likely resample with replacement."""
    n = len(values)
    means = sorted(
        sum(values[i] for i in index) / n for index in itertools.product(range(n), repeat=n)
    )
    return means[min(len(means) - 1, max(0, math.ceil(q * len(means)) - 1))]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-5, 5).map(float), min_size=1, max_size=5), st.integers(0, 2**32))
def test_bootstrap_interval_matches_the_exact_bootstrap_distribution(values, seed):
    low, high = mean_interval(values, seed)
    assert exact_quantile(values, 0.03) - 1e-9 <= low <= exact_quantile(values, 0.07) + 1e-9
    assert exact_quantile(values, 0.93) - 1e-9 <= high <= exact_quantile(values, 0.97) + 1e-9
    assert mean_interval(values, seed) == [low, high]  # fixed seed: reproducible


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.1, 10.0), min_size=1, max_size=8))
def test_geometric_mean_interval_is_the_log_interval_mapped_back(ratios):
    low, high = geometric_mean_interval(ratios)
    log_low, log_high = mean_interval([math.log(r) for r in ratios])
    assert math.isclose(low, math.exp(log_low)) and math.isclose(high, math.exp(log_high))
    assert min(ratios) * (1 - 1e-9) <= low <= high <= max(ratios) * (1 + 1e-9)
    assert np.isfinite([low, high]).all()
