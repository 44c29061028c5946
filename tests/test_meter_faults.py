"""The --agentbench-faults grammar: exact indexes, cadences, and errors that say the fix."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.meter.faults import FaultSpecError, parse_faults


def test_exact_index_wins_over_a_cadence() -> None:
    schedule = parse_faults("every:2:500, 4:429,3:drop,every:3:hang")
    assert [schedule.fault_for(i) for i in range(1, 9)] == [
        None, "500", "drop", "429", None, "500", None, "500"
    ]  # fmt: skip


def test_empty_spec_schedules_nothing() -> None:
    assert not parse_faults("")
    assert parse_faults(" , ").fault_for(1) is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("0:500", "N must be a whole number from 1"),
        ("every:0:500", "K must be a whole number from 1"),
        ("2:200", "HTTP status from 400 to 599"),
        ("2:boom", "'drop' or 'hang'"),
        ("every:2", "neither N:STATUS nor every:K:STATUS"),
        ("2:500,2:429", "request 2 is listed twice"),
    ],
)
def test_bad_specs_name_the_part_and_the_fix(spec: str, message: str) -> None:
    with pytest.raises(FaultSpecError, match="--agentbench-faults") as error:
        parse_faults(spec)
    assert message in str(error.value)


@given(k=st.integers(1, 50), index=st.integers(1, 500))
def test_a_cadence_hits_exactly_its_multiples(k: int, index: int) -> None:
    assert (parse_faults(f"every:{k}:503").fault_for(index) == "503") == (index % k == 0)
