"""The legs block: per-leg figures of segmented trials and how they degrade across legs.

Each scored trial counts its last attempt's legs (a retry starts every leg afresh). A figure is
a mean over the trials that reported it, with their count; unknown is never taken as zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_agentbench.tasks.observation import SCORED, LegRecord, Observation


def last_attempt_legs(observation: Observation) -> list[LegRecord]:
    """The legs of the trial's last attempt that ran any, in order."""
    legs = observation.get("legs") or []
    if not legs:
        return []
    last = max(leg["attempt"] for leg in legs)
    return sorted((leg for leg in legs if leg["attempt"] == last), key=lambda leg: leg["leg"])


def leg_tokens(leg: LegRecord) -> float | None:
    """A leg's tokens (input incl. cached + output incl. reasoning); None when unknown."""
    tokens = leg.get("tokens")
    if not tokens or tokens.get("input") is None or tokens.get("output") is None:
        return None
    return float((tokens["input"] or 0) + (tokens["output"] or 0))


def _mean(values: Sequence[float | None]) -> dict[str, Any]:
    known = [value for value in values if value is not None]
    mean = round(sum(known) / len(known), 6) if known else None
    return {"mean": mean, "counted": len(known)}


def _ratio(pairs: list[tuple[float | None, float | None]]) -> dict[str, Any]:
    """The last leg's total over the first's, over the trials that know both."""
    known = [(first, last) for first, last in pairs if first is not None and last is not None]
    first = sum(pair[0] for pair in known)
    value = round(sum(pair[1] for pair in known) / first, 4) if known and first else None
    return {"ratio": value, "counted": len(known)}


def legs_block(observations: Sequence[Observation]) -> dict[str, Any] | None:
    """The `legs` block of the scored trials that ran in legs; None when none did."""
    trials = [legs for o in observations if o["status"] == SCORED if (legs := last_attempt_legs(o))]
    if not trials:
        return None
    count = max(max(legs[-1]["leg"], legs[-1]["planned"]) for legs in trials)
    rows = []
    for number in range(1, count + 1):
        reached = [leg for legs in trials for leg in legs if leg["leg"] == number]
        exact = sum(1 for leg in reached if leg["exact"])
        rows.append(
            {
                "leg": number,
                "trials": len(reached),
                "prompts": sorted({leg["prompt"] for leg in reached}),
                "exact": exact,
                "exact_rate": round(exact / len(reached), 6) if reached else None,
                "tokens": _mean([leg_tokens(leg) for leg in reached]),
                "requests": _mean([_number(leg["requests"]) for leg in reached]),
                "wall_s": _mean([leg["wall_s"] for leg in reached]),
            }
        )
    # Exact after some leg but not after the trial's last: a later leg undid the work.
    regressed = sum(1 for legs in trials if not legs[-1]["exact"] and any_exact(legs))
    whole = [legs for legs in trials if legs[-1]["leg"] == legs[-1]["planned"]]  # ran every leg
    return {
        "trials": len(trials),
        "legs": rows,
        "degradation": {
            "regressed": regressed,
            "ended_early": len(trials) - len(whole),  # a failed leg ended them before the last
            "tokens_last_to_first": _ratio(
                [(leg_tokens(ls[0]), leg_tokens(ls[-1])) for ls in whole]
            ),
            "wall_last_to_first": _ratio([(ls[0]["wall_s"], ls[-1]["wall_s"]) for ls in whole]),
        },
    }


def any_exact(legs: Sequence[LegRecord]) -> bool:
    return any(leg["exact"] for leg in legs)


def _number(value: int | None) -> float | None:
    return None if value is None else float(value)
