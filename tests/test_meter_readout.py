"""The metering readout over hand-built Observations: totals, cache share, divergence, faults."""

from __future__ import annotations

from typing import Any

from pytest_agentbench.report.metering import metering_lines
from pytest_agentbench.scoring.metering import metering_block


def obs(
    own: dict[str, int] | None,
    wire: dict[str, int] | None,
    faults: int = 0,
    solved: bool = True,
    agent: str = "codex",
    side: dict[str, int] | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "status": "scored",
        "final_exact": solved,
        "tokens": own,
        "agent": {"name": agent},
    }
    if wire is not None:
        full: dict[str, int | None] = {"cache_write": None, "reasoning": None, **wire}
        record["metered"] = {
            "requests": 3,
            "statuses": {"200": 3},
            "tokens": full,
            "side_requests": 1 if side else 0,
            "side_tokens": {"cache_write": None, "reasoning": None, **side} if side else None,
            "faults": faults,
            "retried_after_fault": True if faults else None,
        }
    return record


WIRE = {"input": 0, "cached_input": 500, "output": 10}


def test_divergence_counts_only_trials_where_both_are_known_and_flags_over_one_percent() -> None:
    trials = [
        obs({"input": 1050, "cached_input": 500, "output": 10}, {**WIRE, "input": 1000}),
        obs(None, {"input": 3000, "cached_input": 0, "output": 5}),
        obs({"input": 7, "cached_input": 0, "output": 1}, None),
    ]  # fmt: skip
    entry = metering_block(trials)["codex"]
    assert (entry["trials"], entry["metered_trials"], entry["requests"]) == (3, 2, 6)
    assert entry["divergence"]["input"] == {"value": 0.05, "trials": 1, "flagged": True}
    assert entry["divergence"]["output"] == {"value": 0.0, "trials": 1, "flagged": False}
    assert entry["tokens"]["input"] == 4000 and entry["tokens"]["reasoning"] is None
    assert entry["cache_hit_share"] == 500 / 4000
    lines = metering_lines({"codex": entry})
    assert "  self-report divergence input: +5.00% over 1 trial  <-- over 1%" in lines
    assert "  1 trial ran unmetered (no API key, or an account login)" in lines


def test_side_requests_are_shown_apart_and_left_out_of_the_divergence() -> None:
    """opencode's own report leaves out its title request: compared with the requests that
    carried tools it does not diverge, and the title request's tokens are shown apart."""
    title = {"input": 30, "cached_input": 0, "output": 5}
    own = {"input": 4500, "cached_input": 3600, "output": 210}
    wire = {"input": 4530, "cached_input": 3600, "output": 215}
    entry = metering_block([obs(own, wire, agent="opencode", side=title)])["opencode"]
    assert entry["tokens"]["input"] == 4530 and entry["side_requests"] == 1
    assert entry["side_tokens"]["input"] == 30
    assert {d["value"] for d in entry["divergence"].values()} == {0.0}
    lines = metering_lines({"opencode": entry})
    side_line = "side requests (no tools, not in the divergence) 1: input 30, output 5"
    assert f"  cache-hit share 79.5%; {side_line}" in lines
    assert not any("over 1%" in line for line in lines)


def test_a_cli_that_ran_unmetered_gets_one_line_saying_why() -> None:
    info = {"name": "claude", "meter": "unmetered: it authenticates with X, not an API key"}
    block = metering_block(
        [obs({"input": 1, "cached_input": 0, "output": 1}, None, agent="claude")], info
    )
    assert block["claude"]["unmetered_reason"] == "it authenticates with X, not an API key"
    assert metering_lines(block) == [
        "meter: claude ran unmetered (1 trial): it authenticates with X, not an API key; "
        "its tokens are its own report"
    ]


def test_fault_readout_keeps_the_in_run_control_apart() -> None:
    wire = {"input": 10, "cached_input": 0, "output": 1}
    trials = [
        obs(None, wire, faults=2, solved=True),
        obs(None, wire, faults=1, solved=False),
        obs(None, wire, solved=True),
        obs(None, wire, solved=False),
        obs(None, wire, solved=True, agent="claude"),
    ]
    block = metering_block(trials)
    assert block["codex"]["faults"] == {
        "faulted_trials": 2,
        "retried": 2,
        "still_solved": 1,
        "control_trials": 2,
        "control_solve_rate": 0.5,
    }
    assert block["claude"]["faults"]["faulted_trials"] == 0
    assert any("in-run control 50% solved of 2" in line for line in metering_lines(block))
