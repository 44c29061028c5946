"""Segmented trials: one agent session run as N legs in the same workspace.

Leg 1 gets the task; each later leg resumes the session with a bare continuation (never the
task again, which would hide the drift the legs exist to expose), or with a steer: a user
turn given for that leg. The step budget is divided across the legs, never multiplied, so a
segmented trial may not work longer than an unsegmented one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

CONTINUATION = "Continue where you left off."
STEER_OPTION = "--agentbench-steer"
SEGMENTS_OPTION = "--agentbench-segments"

LegPrompt = Literal["task", "continuation", "steer"]


def parse_steer(raw: str, legs: int) -> tuple[int, str]:
    """(leg, text) of a `TEXT@LEG` steer; ValueError naming the option and the fix when the
    form is wrong or LEG is not one of legs 2..legs (leg 1 is the task's own)."""
    text, at, number = raw.rpartition("@")
    if not at or not number.strip().isdigit() or not text.strip():
        raise ValueError(
            f"{STEER_OPTION} {raw!r}: expected TEXT@LEG, a user turn and the leg it replaces "
            'the continuation of, e.g. "also handle empty input@2"'
        )
    leg = int(number)
    if legs < 2:
        raise ValueError(
            f"{STEER_OPTION} {raw!r}: a steer needs a later leg to arrive at; run the trials "
            f"in legs with {SEGMENTS_OPTION} N (N >= {max(leg, 2)})"
        )
    if not 2 <= leg <= legs:
        raise ValueError(
            f"{STEER_OPTION} {raw!r}: leg {leg} is not one of the later legs 2..{legs} of "
            f"{SEGMENTS_OPTION} {legs} (leg 1 is the task); steer a leg from 2 to {legs}"
            + (f", or raise {SEGMENTS_OPTION} to {leg}" if leg > legs else "")
        )
    return leg, text


def split_steps(max_steps: int | None, legs: int) -> tuple[int | None, ...]:
    """Each leg's share of the step budget: max_steps divided, the remainder on the last leg.
    ValueError when some leg would get no step at all."""
    if max_steps is None:
        return (None,) * legs
    if max_steps < legs:
        raise ValueError(
            f"max_steps = {max_steps} cannot be split into {legs} legs of at least one step; "
            "raise the task's max_steps or run fewer segments"
        )
    share = max_steps // legs
    return (*(share,) * (legs - 1), share + max_steps % legs)


@dataclass(frozen=True)
class LegPlan:
    """How a trial's first answer is split: its legs, their steers and step shares. Session
    turns 0..legs-1 are the legs; later turns are recovery rounds."""

    legs: int = 1
    steers: Mapping[int, str] = field(default_factory=dict)  # leg -> the user turn it gets
    steps: tuple[int | None, ...] = (None,)  # each leg's step budget; None: no cap

    @property
    def segmented(self) -> bool:
        return self.legs > 1

    def leg_of(self, turn: int) -> int | None:
        """The 1-based leg a session turn is, None for a recovery round."""
        return turn + 1 if turn < self.legs else None

    def prompt_kind(self, leg: int) -> LegPrompt:
        if leg == 1:
            return "task"
        return "steer" if leg in self.steers else "continuation"

    def prompt(self, leg: int, task_prompt: str) -> str:
        """What leg `leg` is told: the task, its steer, or the bare continuation."""
        kind = self.prompt_kind(leg)
        if kind == "task":
            return task_prompt
        return self.steers[leg] if kind == "steer" else CONTINUATION

    def step_limit(self, turn: int, max_steps: int | None) -> int | None:
        """The step cap of a session turn: a leg's share; a recovery round's, or an unbroken
        session's, the task's own."""
        leg = self.leg_of(turn)
        return self.steps[leg - 1] if leg is not None and self.segmented else max_steps


def trial_legs(run: int, task: int | None, arm: int | None) -> int:
    """A trial's legs: its arm's `segments`, else its task's, else the run's."""
    return arm or task or run


def plan_legs(legs: int, steers: tuple[tuple[int, str], ...], max_steps: int | None) -> LegPlan:
    """The plan of a trial of `legs` legs; steers past its last leg do not arrive."""
    return LegPlan(
        legs=legs,
        steers={leg: text for leg, text in steers if leg <= legs},
        steps=split_steps(max_steps, legs),
    )
