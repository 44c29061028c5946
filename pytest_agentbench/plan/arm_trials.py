"""The run side of arms: the arms of a run, its trials' order, and each trial's prompt.

Every arm runs every task's repeats in one session. Within a task the trials go repeat by
repeat, each repeat's arms in an order drawn from (run seed, task, repeat), so drift and
throttling hit every arm alike; every process, xdist workers too, derives the same order.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.tasks.arms import Arm, ArmsError, load_arms
from pytest_agentbench.tasks.hashing import stable_int
from pytest_agentbench.tasks.model import Task

ARMS_KEY = pytest.StashKey[tuple[Arm, ...]]()
ARMS_FILE_KEY = pytest.StashKey[Path]()  # where they came from, for a resume to read again


def configure_arms(config: pytest.Config, path: Path) -> tuple[Arm, ...]:
    """The run's arms, kept in the config; a bad arms file is a usage error before any trial."""
    try:
        arms = load_arms(path)
    except ArmsError as exc:
        raise pytest.UsageError(f"--arms: {exc}") from None
    config.stash[ARMS_KEY] = arms
    config.stash[ARMS_FILE_KEY] = path
    return arms


def run_arms(config: pytest.Config) -> tuple[Arm, ...] | None:
    """The arms of this run, None when --arms was not given."""
    return config.stash.get(ARMS_KEY, None)


def arm_identities(arms: tuple[Arm, ...], identity: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each arm's configuration identity: the run's, plus the arm's name and the hash of what
    it delivers (vanilla adds nothing, so it pools with a plain run of the same settings)."""
    return {arm.name: {**identity, **arm.configuration_fields()} for arm in arms}


def refuse_other_arms(
    recorded: dict[str, Any], arms: tuple[Arm, ...] | None, identity: dict[str, Any], where: str
) -> None:
    """A resumed run reuses an arm's trials only while the arm delivers the same bytes."""
    before = recorded.get("arms") or {}
    now = arm_identities(arms, identity) if arms is not None else {}
    changed = sorted(name for name in set(before) & set(now) if before[name] != now[name])
    if changed:
        raise pytest.UsageError(
            f"--agentbench-resume {where}: arm {', '.join(changed)} delivers other bytes than "
            "the recorded run's (its guidance, skills, prefix or segments changed); resume "
            "with the arms file it ran with, or start a new run"
        )


def trial_order(
    task_id: str, arms: tuple[Arm, ...], repeats: list[int], seed: int
) -> list[tuple[Arm, int]]:
    """A task's (arm, repeat) trials: repeat by repeat, the arms shuffled within each."""
    order: list[tuple[Arm, int]] = []
    for repeat in repeats:
        shuffled = list(arms)
        random.Random(stable_int("arms", seed, task_id, repeat)).shuffle(shuffled)
        order.extend((arm, repeat) for arm in shuffled)
    return order


def item_name(arm: Arm | None, repeat: int) -> str:
    """A trial item's name: r<k>, or <arm>::r<k> in a run with arms."""
    return f"r{repeat}" if arm is None else f"{arm.name}::r{repeat}"


def arm_prompt(arm: Arm | None, task: Task) -> str | None:
    """The prompt a trial of this arm gets: the task's, after the arm's prefix (a blank line
    between); None when the arm takes its prefix from a field the task lacks."""
    if arm is None:
        return task.prompt
    try:
        prefix = arm.prefix_for(task)
    except LookupError:
        return None
    return task.prompt if prefix is None else f"{prefix}\n\n{task.prompt}"


def arm_name(arm: Arm | None) -> str | None:
    """The name recorded on a trial: None without arms (its records stay as they were)."""
    return None if arm is None else arm.name
