"""The trials of one configuration, pooled from any number of records, each counted once.

Every trial carries an id of its own: the run that executed it, its task, its repeat and its
attempt (the n-th execution of that (task, repeat) slot in that run, from 0), kept when a
resumed run reuses the trial. A trial that reaches a pool twice (the same run given twice, or
a resumed run's copy of its source) counts once. Provider stops and infrastructure failures
stay in the pool as evidence (provider stops count toward quarantine); any other record (a
harness error, a trial the budget or the breaker did not start) only says the slot was not
filled, so it leaves the pool when a scored trial fills that slot. Trials of one task with
different fixture hashes measured different tasks: they never pool in one cell (see
fixture_conflicts).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from pytest_agentbench.tasks.observation import (
    INFRASTRUCTURE,
    PROVIDER_STOP,
    SCORED,
    Observation,
    observation_slot_task,
)

QUARANTINE_MIN_TRIALS = 50
QUARANTINE_STOP_DIVISOR = 5  # 20%, checked as stops * 5 >= trials: no float at the threshold


def trial_id(run_id: str, task: str, repeat: int, attempt: int) -> str:
    return f"{run_id}/{task}/r{repeat}/a{attempt}"


def with_trial_ids(records: Sequence[Observation], run_id: str) -> list[Observation]:
    """The records of one run in file order, each with its trial id; a record written before
    trials had ids gets the one its position implies (the n-th record of its slot)."""
    seen: Counter[tuple[str, int]] = Counter()
    result = []
    for record in records:
        slot = (observation_slot_task(record), record["repeat"])
        if "trial_id" not in record:
            record = record.copy()
            record["trial_id"] = trial_id(run_id, slot[0], slot[1], seen[slot])
        seen[slot] += 1
        result.append(record)
    return result


def pool(observations: Iterable[Observation]) -> list[Observation]:
    """Each trial once (its first record), and records that filled no slot only while no
    scored trial of their (task, repeat) is in the pool."""
    kept: list[Observation] = []
    ids: set[str] = set()
    for observation in observations:
        key = observation.get("trial_id")
        if key is not None:
            if key in ids:
                continue
            ids.add(key)
        kept.append(observation)
    filled = {(observation_slot_task(o), o["repeat"]) for o in kept if o["status"] == SCORED}
    return [
        o
        for o in kept
        if o["status"] in (SCORED, PROVIDER_STOP, INFRASTRUCTURE)
        or (observation_slot_task(o), o["repeat"]) not in filled
    ]


def fixture_conflicts(observations: Iterable[Observation]) -> dict[str, list[Observation]]:
    """Task id -> its trials, for each task whose trials carry more than one fixture hash."""
    by_task: dict[str, list[Observation]] = defaultdict(list)
    for observation in observations:
        by_task[observation["task"]].append(observation)
    return {
        task_id: trials
        for task_id, trials in by_task.items()
        if len({o.get("fixture_hash") for o in trials} - {None}) > 1
    }


def quarantine(observations: Iterable[Observation]) -> dict[str, Any]:
    """Provider stops among a configuration's trials, and whether they quarantine it.

    trials: scored trials and provider stops (records that reached the provider);
    provider_stops: stops with a machine-readable cause (the provider-stop contract).
    Quarantined: at least 50 trials of which at least 20% were such stops.
    """
    trials = stops = 0
    for observation in observations:
        if observation["status"] == SCORED:
            trials += 1
        elif observation["status"] == PROVIDER_STOP:
            trials += 1
            stops += bool(observation.get("cause"))
    quarantined = trials >= QUARANTINE_MIN_TRIALS and stops * QUARANTINE_STOP_DIVISOR >= trials
    return {
        "quarantined": quarantined,
        "trials": trials,
        "provider_stops": stops,
        "share": stops / trials if trials else None,
        "reason": (
            f"{stops} of {trials} trials were provider stops (>= 20% of >= 50 trials)"
            if quarantined
            else None
        ),
    }
