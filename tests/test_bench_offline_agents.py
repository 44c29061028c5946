"""The offline-agent benchmark reports a ratio only on equal work: both harnesses ran exactly
the planned trials of the peer's tasks, as their own records say. Nothing here is timed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.offline_agents import run_ours, run_peer
from benchmarks.peer import Plan, Tally, UnequalWork, equal_work, find_peer, our_tally, peer_tally
from benchmarks.procs import pytest_dir

PLAN = Plan(("a", "b"), repeats=3, all_pass=True)
EQUAL = Tally({"a": 3, "b": 3}, passed=6, errors=0)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    """A record file as the harness writes it; returns its directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path.parent


def test_equal_work_is_the_planned_trial_count() -> None:
    assert equal_work(PLAN, EQUAL, EQUAL) == 6


@pytest.mark.parametrize(
    ("ours", "peer", "message"),
    [
        (EQUAL, Tally({"a": 3, "b": 2}, 5, 0),
         "rerun-bench ran 5 trials, the plan is 6 (3 of each of 2 tasks; off: b: 2)"),
        (Tally({"a": 4, "b": 2}, 6, 0), EQUAL, "this harness ran 6 trials, the plan is 6"),
        (Tally({"a": 3, "b": 3, "c": 1}, 7, 0), EQUAL, "off: c: 1"),
        (Tally({"a": 3, "b": 3}, 5, 0), EQUAL, "this harness passed 5 trials, the agent passes 6"),
        (EQUAL, Tally({"a": 3, "b": 3}, 6, 1), "rerun-bench has 1 trial not graded"),
    ],
)  # fmt: skip
def test_unequal_work_is_refused_saying_what_differs(
    ours: Tally, peer: Tally, message: str
) -> None:
    with pytest.raises(UnequalWork, match=r"^unequal work, no ratio reported") as refused:
        equal_work(PLAN, ours, peer)
    assert message in str(refused.value)


def test_the_nop_plan_expects_no_pass() -> None:
    nop = Plan(("a", "b"), repeats=3, all_pass=False)
    assert equal_work(nop, Tally({"a": 3, "b": 3}, 0, 0), Tally({"a": 3, "b": 3}, 0, 0)) == 6
    with pytest.raises(UnequalWork, match="passed 6 trials, the agent passes 0"):
        equal_work(nop, EQUAL, Tally({"a": 3, "b": 3}, 0, 0))


def test_the_records_are_read_task_by_task(tmp_path: Path) -> None:
    peer = write_jsonl(
        tmp_path / "peer" / "runs.jsonl",
        [
            {"task_id": "a", "run_index": 0, "passed": True, "agent_error": None,
             "verify_timed_out": False},
            {"task_id": "a", "run_index": 1, "passed": False, "agent_error": "exit code 1",
             "verify_timed_out": False},
            {"task_id": "b", "run_index": 0, "passed": False, "agent_error": None,
             "verify_timed_out": True},
        ],
    )  # fmt: skip
    assert peer_tally(peer) == Tally({"a": 2, "b": 1}, passed=1, errors=2)
    ours = write_jsonl(
        tmp_path / "ours" / "observations.jsonl",
        [
            {"task": "a", "repeat": 0, "status": "scored", "first_exact": True},
            {"task": "b", "repeat": 0, "status": "error", "first_exact": False},
        ],
    )
    assert our_tally(ours) == Tally({"a": 1, "b": 1}, passed=1, errors=1)


def test_a_trial_recorded_twice_or_a_missing_record_is_refused(tmp_path: Path) -> None:
    row = {"task": "a", "repeat": 0, "status": "scored", "first_exact": True}
    twice = write_jsonl(tmp_path / "twice" / "observations.jsonl", [row, row])
    with pytest.raises(UnequalWork, match="trials recorded more than once: a #0"):
        our_tally(twice)
    with pytest.raises(UnequalWork, match=r"runs\.jsonl: missing"):
        peer_tally(tmp_path / "nowhere")


@pytest.mark.real
@pytest.mark.parametrize("agent", ["oracle", "nop"])
def test_both_harnesses_records_of_one_run_agree(tmp_path: Path, agent: str) -> None:
    """The tallies read from the real outputs of both harnesses, serial, one repeat each."""
    try:
        peer = find_peer()
    except RuntimeError as missing:
        pytest.skip(str(missing))
    where = pytest_dir(tmp_path / "cwd")
    plan = Plan(peer.task_ids, repeats=1, all_pass=agent == "oracle")
    _, ours = run_ours(where, peer, agent, 1, 1, tmp_path / "ours")
    _, theirs = run_peer(where, peer, agent, 1, 1, tmp_path / "peer")
    assert equal_work(plan, ours, theirs) == len(peer.task_ids) == 10
