"""The comparison statistics agree with brute-force definitions on small inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.stats import geometric_mean_interval, mean_interval, sign_test

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
