"""Metric functions against brute-force definitions."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.grading.similarity import changed_lines
from pytest_agentbench.scoring.metrics import (
    bootstrap_mean_interval,
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
        **kw,
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
    low, high = summary["first_exact_ci"]
    assert min(rates) - 1e-9 <= low <= high <= max(rates) + 1e-9
    by_id = [sum(table[t]) / len(table[t]) for t in sorted(table)]  # the report's task order
    assert summary["first_exact_ci"] == bootstrap_mean_interval(by_id, 3)
    passes = sum(sum(outs) for outs in table.values())
    assert summary["pooled_first_exact"] == passes / len(observations)
    assert summary["pooled_first_exact_ci"] == wilson_interval(passes, len(observations))
    flips = [
        sum(a != b for a, b in itertools.permutations(outs, 2)) / (len(outs) * (len(outs) - 1))
        for outs in table.values()
        if len(outs) >= 2
    ]
    assert summary["flip_rate_tasks"] == len(flips)
    assert summary["flip_rate"] == (None if not flips else pytest.approx(sum(flips) / len(flips)))


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
    assert summary["tokens"] == {
        "median": 15.0,
        "mean": 15.0,
        "total": 15.0,
        "cv": None,
        "cv_tasks": 0,
        "known": 1,
        "missing": 1,
    }
    assert summary["cost_usd"]["known"] == 1 and summary["cost_usd"]["mean"] == 0.5


def test_describe_with_nothing_known() -> None:
    assert describe([[None], [None]]) == {
        "median": None,
        "mean": None,
        "total": None,
        "cv": None,
        "cv_tasks": 0,
        "known": 0,
        "missing": 2,
    }


def brute_cv(values: list[float]) -> float:
    """Sample standard deviation (n - 1) over the mean, written out."""
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) / mean


usage_tables = st.dictionaries(
    st.sampled_from(["a", "b", "c"]),
    # No subnormals: a mean of 0 and 5e-324 underflows to 0 (no CV) while the tokens' doubled
    # values keep theirs, which this reference does not model; no usage is that small.
    st.lists(
        st.one_of(st.none(), st.floats(0.0, 50.0, allow_subnormal=False)), min_size=1, max_size=5
    ),
    min_size=1,
)


@settings(max_examples=80, deadline=None)
@given(table=usage_tables)
def test_usage_cv_is_within_each_task_then_averaged(table: dict[str, list[float | None]]) -> None:
    observations = [
        _obs(t, r, r % 2 == 0, cost_usd=v, wall_s=v, tokens={"input": v, "output": v})
        for t, values in table.items()
        for r, v in enumerate(values)
    ]
    summary, per_task = summarize(sorted(table), observations, k=1, seed=0)
    cvs = {}
    for task_id, values in table.items():
        known = [v for v in values if v is not None]
        cvs[task_id] = brute_cv(known) if len(known) >= 2 and sum(known) > 0 else None
    for task in per_task:
        assert task["cost_usd_cv"] == pytest.approx(cvs[task["id"]])
        assert task["wall_s_cv"] == pytest.approx(cvs[task["id"]])
    some = [cv for cv in cvs.values() if cv is not None]
    for name in ("cost_usd", "wall_s", "tokens", "output_tokens"):
        assert summary[name]["cv_tasks"] == len(some)
        assert summary[name]["cv"] == (pytest.approx(sum(some) / len(some)) if some else None)
    known = sorted(v for values in table.values() for v in values if v is not None)
    wall = summary["wall_s"]
    assert wall["total"] == (pytest.approx(sum(known)) if known else None)
    if known:
        middle = len(known) // 2
        median = known[middle] if len(known) % 2 else (known[middle - 1] + known[middle]) / 2
        assert summary["output_tokens"]["median"] == pytest.approx(median)
    successes = sum(r % 2 == 0 for values in table.values() for r in range(len(values)))
    assert summary["successes"] == successes
    cost = sum(known) / successes if known else None
    assert summary["cost_per_success"] == (None if cost is None else pytest.approx(cost))


def test_the_cv_of_tasks_is_not_the_cv_of_pooled_trials() -> None:
    """Two steady tasks of different sizes: each varies little, the pool varies a lot."""
    costs = {"a": [1.0, 1.2], "b": [10.0, 12.0]}
    observations = [
        _obs(t, r, True, cost_usd=c) for t, cs in costs.items() for r, c in enumerate(cs)
    ]
    summary, _ = summarize(["a", "b"], observations, k=1, seed=0)
    assert summary["cost_usd"]["cv"] == pytest.approx(brute_cv([1.0, 1.2]))
    assert summary["cost_usd"]["cv"] != pytest.approx(brute_cv([1.0, 1.2, 10.0, 12.0]))


def test_final_eof_normalized_is_reported_beside_first() -> None:
    observations = [
        _obs("a", 0, False, final_eof_normalized=True),
        _obs("a", 1, False, final_eof_normalized=False),
        _obs("b", 0, True, final_eof_normalized=True),
        _obs("c", 0, False),  # recorded before the field existed: unknown
    ]
    summary, per_task = summarize(["a", "b", "c"], observations, k=1, seed=0)
    assert [t["final_eof_normalized"] for t in per_task] == [0.5, 1.0, None]
    assert summary["final_eof_normalized"] == pytest.approx(0.75)
    assert summary["final_eof_tasks"] == 2
    assert summary["eof_normalized"] == pytest.approx(1 / 3)


def diff_of(path: str, removed: list[str], added: list[str]) -> str:
    body = [f"-{line}\n" for line in removed] + [f"+{line}\n" for line in added]
    hunk = f"@@ -1,{len(removed)} +1,{len(added)} @@\n"
    return f"--- a/{path}\n+++ b/{path}\n{hunk}" + "".join(body)


def brute_jaccard(a: set[str], b: set[str]) -> float:
    return 1.0 if not a | b else len(a & b) / len(a | b)


line_sets = st.lists(st.sets(st.sampled_from(["x", "y", "z", "--w", "+v"]), max_size=4), max_size=4)


@settings(max_examples=80, deadline=None)
@given(changes=line_sets, failing=st.integers(0, 2))
def test_approach_similarity_is_the_mean_pairwise_jaccard_of_passing_trials(
    changes: list[set[str]], failing: int
) -> None:
    observations = [
        _obs("a", r, True, changed_lines=changed_lines(diff_of("f.txt", [], sorted(lines))))
        for r, lines in enumerate(changes)
    ]
    observations += [
        _obs("a", 10 + r, False, changed_lines=changed_lines(diff_of("f.txt", [], ["q"])))
        for r in range(failing)
    ]
    summary, per_task = summarize(["a"], observations, k=1, seed=0)
    pairs = list(itertools.combinations(changes, 2))
    expected = sum(brute_jaccard(a, b) for a, b in pairs) / len(pairs) if pairs else None
    assert per_task[0]["similarity"] == (None if expected is None else pytest.approx(expected))
    assert summary["similarity_tasks"] == (1 if pairs else 0)


def test_changed_lines_key_lines_by_file_and_side_and_give_up_on_a_cut_diff() -> None:
    one = changed_lines(diff_of("f.txt", ["old"], ["new"]))
    assert one is not None and len(one) == 2
    assert changed_lines(diff_of("g.txt", ["old"], ["new"])) != one
    assert changed_lines(diff_of("f.txt", ["new"], ["old"])) != one
    assert changed_lines(diff_of("f.txt", ["old"], ["new"]) + "... (diff cut)\n") is None
