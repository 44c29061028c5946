"""The arms block's paired figures, checked against brute force on hand-made trials."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_compare import trial

from pytest_agentbench.run.store import configuration_identity
from pytest_agentbench.scoring.arm_compare import arms_block, split_by_arm
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.arms import VANILLA
from pytest_agentbench.tasks.observation import Observation

SETTINGS = Settings(agent="mock", repeats=4)
INFO = {"name": "mock", "cli_version": "builtin"}
IDENTITY = configuration_identity(SETTINGS, INFO, {"kind": "tmp", "image": None})


def arm_trials(arm: str, outcomes: dict[str, str], tokens: int) -> list[Observation]:
    """Trials of one arm: task T ran the letters outcomes[T] (test_compare.LETTERS)."""
    made = []
    for task, letters in outcomes.items():
        for repeat, letter in enumerate(letters):
            observation = trial(task, repeat, letter, tokens)
            observation["arm"] = arm
            observation["trial_id"] = f"run/{arm}::{task}/r{repeat}/a0"
            made.append(observation)
    return made


def block_of(
    arms: dict[str, dict[str, str]],
    anchors: dict[str, str] | None = None,
    unsolvable: frozenset[str] = frozenset(),
) -> Any:
    tokens = {name: 100 + 50 * index for index, name in enumerate(arms)}
    observations = [o for name, out in arms.items() for o in arm_trials(name, out, tokens[name])]
    tasks = sorted({task for out in arms.values() for task in out})
    declared = {
        t: {
            "category": "edit",
            "tags": [],
            "fixture_hash": f"h-{t}",
            "no_solution": t in unsolvable,
        }
        for t in tasks
    }
    identities = {
        name: IDENTITY if name == VANILLA else {**IDENTITY, "arm": name, "arm_identity": name}
        for name in arms
    }
    configurations = split_by_arm(identities, SETTINGS, INFO, declared, observations)
    return arms_block(configurations, anchors or {})


def brute_cells(vanilla: dict[str, str], treatment: dict[str, str], passing: str) -> list[int]:
    """[both, vanilla only, treatment only, neither] over trials paired by repeat."""
    cells = [0, 0, 0, 0]
    for task in sorted(set(vanilla) & set(treatment)):
        for old, new in zip(vanilla[task], treatment[task], strict=False):
            a, b = old in passing, new in passing
            cells[0 if a and b else 1 if a else 2 if b else 3] += 1
    return cells


def brute_binomial(b: int, c: int) -> float:
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


LETTER_RUNS = st.text(alphabet="PRF", min_size=1, max_size=4)
OUTCOMES = st.dictionaries(st.sampled_from([f"t{i}" for i in range(7)]), LETTER_RUNS, min_size=1)


@settings(max_examples=60, deadline=None)
@given(vanilla=OUTCOMES, treatment=OUTCOMES)
def test_paired_figures_equal_brute_force(vanilla, treatment) -> None:
    block = block_of({VANILLA: vanilla, "core": treatment})
    (pair,) = block["paired"]
    shared = sorted(set(vanilla) & set(treatment))
    for outcome, passing in (("first_exact", "P"), ("final_exact", "PR")):
        figure = pair[outcome]
        both, v_only, t_only, neither = brute_cells(vanilla, treatment, passing)
        assert figure["trials"] == {
            "both": both,
            "vanilla_only": v_only,
            "treatment_only": t_only,
            "neither": neither,
            "paired_trials": both + v_only + t_only + neither,
            "p": brute_binomial(v_only, t_only) if shared else None,
        }

        def rate(letters: str, passing: str = passing) -> float:
            return sum(letter in passing for letter in letters) / len(letters)

        differences = [rate(treatment[t]) - rate(vanilla[t]) for t in shared]
        assert figure["pairs"] == len(shared)
        if shared:
            assert math.isclose(figure["point"], sum(differences) / len(differences))
            up, down = sum(d > 0 for d in differences), sum(d < 0 for d in differences)
            assert figure["sign_test_p"] == brute_binomial(up, down)
    # Every treatment trial used 150 tokens, every vanilla one 100: the ratio is 1.5.
    if shared:
        assert math.isclose(pair["tokens_ratio"]["point"], 1.5)


def test_rows_per_arm_and_the_anchor_ratio() -> None:
    vanilla = {"a": "PPFF", "b": "PFFF"}
    wrong = {"a": "PFFF"}  # b has no seed_wrong: it never ran in that arm
    block = block_of({VANILLA: vanilla, "seed-wrong": wrong}, {"seed-wrong": "seed_wrong"})
    rows = {row["arm"]: row for row in block["arms"]}
    assert rows[VANILLA]["trials"] == 8 and rows["seed-wrong"]["trials"] == 4
    assert rows[VANILLA]["identity"] == IDENTITY
    assert rows["seed-wrong"]["identity"]["arm"] == "seed-wrong"
    (anchor,) = block["anchors"]
    # On the one task the arm ran: 1 of 4 solved against vanilla's 2 of 4.
    assert anchor["solve_rate"] == 0.25 and anchor["vanilla_solve_rate"] == 0.5
    assert anchor["ratio"] == 0.5 and anchor["measure"] == "anchor resistance"
    assert anchor["skipped_tasks"] == ["b"]


def test_anchor_resistance_counts_solvable_tasks_only() -> None:
    """A no-solution task's verifier passes when the agent did not cheat: not a solve."""
    vanilla = {"a": "PPFF", "honest": "PPPP"}
    wrong = {"a": "PFFF", "honest": "PPPP"}
    block = block_of(
        {VANILLA: vanilla, "seed-wrong": wrong}, {"seed-wrong": "seed_wrong"}, frozenset({"honest"})
    )
    (anchor,) = block["anchors"]
    assert (anchor["tasks"], anchor["trials"], anchor["vanilla_trials"]) == (1, 4, 4)
    assert anchor["solve_rate"] == 0.25 and anchor["ratio"] == 0.5
    assert anchor["no_solution_tasks"] == ["honest"]
