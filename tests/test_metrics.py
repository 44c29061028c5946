"""Metric functions against brute-force definitions."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.metrics import (
    describe,
    flip_rate,
    pass_at_k,
    pass_hat_k,
    summarize,
    wilson_interval,
)

outcome_lists = st.lists(st.booleans(), min_size=1, max_size=8)


@given(outcomes=outcome_lists)
def test_flip_rate_is_the_share_of_disagreeing_pairs(outcomes: list[bool]) -> None:
    n, c = len(outcomes), sum(outcomes)
    pairs = list(itertools.permutations(range(n), 2))
    if n < 2:
        assert flip_rate(n, c) is None
        return
    brute = sum(outcomes[i] != outcomes[j] for i, j in pairs) / len(pairs)
    assert math.isclose(flip_rate(n, c), brute)


@given(outcomes=outcome_lists, k=st.integers(1, 8))
def test_pass_at_k_and_pass_hat_k_enumerate_subsets(outcomes: list[bool], k: int) -> None:
    n, c = len(outcomes), sum(outcomes)
    if k > n:
        assert pass_at_k(n, c, k) is None and pass_hat_k(n, c, k) is None
        return
    subsets = list(itertools.combinations(outcomes, k))
    assert math.isclose(pass_at_k(n, c, k), sum(any(s) for s in subsets) / len(subsets))
    assert math.isclose(pass_hat_k(n, c, k), sum(all(s) for s in subsets) / len(subsets))


@given(successes=st.integers(0, 200), extra=st.integers(0, 200))
def test_wilson_interval_contains_the_estimate(successes: int, extra: int) -> None:
    trials = successes + extra
    interval = wilson_interval(successes, trials)
    if trials == 0:
        assert interval is None
        return
    low, high = interval
    assert 0 <= low <= successes / trials <= high <= 1


def test_wilson_matches_a_known_value() -> None:
    low, high = wilson_interval(5, 10)
    assert math.isclose(low, 0.2366, abs_tol=1e-4) and math.isclose(high, 0.7634, abs_tol=1e-4)


def _obs(task: str, repeat: int, first: bool, final: bool | None = None, **kw):
    return {
        "task": task,
        "repeat": repeat,
        "status": kw.pop("status", "scored"),
        "first_exact": first,
        "final_exact": first if final is None else final,
        "eof_normalized": first,
        "tokens": kw.pop("tokens", None),
        "cost_usd": kw.pop("cost_usd", None),
        "wall_s": kw.pop("wall_s", 1.0),
    }


task_tables = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d"]),
    st.lists(st.booleans(), min_size=1, max_size=5),
    min_size=1,
)


@settings(max_examples=80, deadline=None)
@given(table=task_tables, unobserved=st.integers(0, 2))
def test_summary_rates_are_per_task_means(table: dict[str, list[bool]], unobserved: int) -> None:
    observations = [_obs(t, r, ok) for t, outs in table.items() for r, ok in enumerate(outs)]
    declared = sorted(table) + [f"z{i}" for i in range(unobserved)]
    summary, per_task = summarize(declared, observations, k=1, seed=3)
    rates = [sum(outs) / len(outs) for outs in table.values()]
    assert math.isclose(summary["first_exact"], sum(rates) / len(rates))
    assert summary["tasks_observed"] == len(table)
    assert math.isclose(summary["coverage"], len(table) / len(declared))
    assert math.isclose(summary["score"], summary["quality"] * summary["coverage"])
    flaky = [0 < sum(o) < len(o) for o in table.values()]
    assert math.isclose(summary["flaky_tasks"], sum(flaky) / len(flaky))
    assert summary["trials"] == len(observations)
    assert [t["id"] for t in per_task] == sorted(declared)
    low, high = summary["task_bootstrap_ci"]
    assert min(rates) - 1e-9 <= low <= high <= max(rates) + 1e-9


def test_quality_weights_first_and_final() -> None:
    observations = [_obs("a", 0, False, True), _obs("a", 1, True, True)]
    summary, _ = summarize(["a"], observations, k=2, seed=0)
    assert math.isclose(summary["quality"], 0.75 * 0.5 + 0.25 * 1.0)
    assert math.isclose(summary["pass_at_k"], 1.0) and math.isclose(summary["pass_hat_k"], 0.0)


def test_unscored_trials_are_counted_apart_and_unknown_is_not_zero() -> None:
    observations = [
        _obs("a", 0, True, tokens={"input": 10, "output": 5}, cost_usd=0.5),
        _obs("a", 1, False),
        _obs("a", 2, False, status="provider_stop"),
        _obs("a", 3, False, status="error"),
    ]
    summary, _ = summarize(["a"], observations, k=2, seed=0)
    assert summary["trials"] == 2
    assert summary["provider_stops"] == 1 and summary["errors"] == 1
    assert summary["tokens"] == {"median": 15.0, "mean": 15.0, "cv": None, "known": 1, "missing": 1}
    assert summary["cost_usd"]["known"] == 1 and summary["cost_usd"]["mean"] == 0.5


def test_describe_with_nothing_known() -> None:
    assert describe([None, None]) == {
        "median": None,
        "mean": None,
        "cv": None,
        "known": 0,
        "missing": 2,
    }
