"""The fault schedule of --agentbench-faults: which request of a trial gets which fault.

Grammar, comma-separated: `N:STATUS` (the N-th request of each trial, counting from 1) and
`every:K:STATUS` (every K-th request); STATUS is an HTTP status (400-599), `drop` (the
connection closes after the first bytes of a stream) or `hang` (no answer until the client
gives up). An exact index wins over a cadence; between cadences, the first listed wins.
"""

from __future__ import annotations

from dataclasses import dataclass

DROP = "drop"
HANG = "hang"


class FaultSpecError(ValueError):
    """A fault spec that cannot be read; the message names the part and the fix."""


@dataclass(frozen=True)
class FaultSchedule:
    exact: dict[int, str]
    cadences: tuple[tuple[int, str], ...]

    def fault_for(self, index: int) -> str | None:
        """The fault of the index-th request (1-based) of a trial, or None."""
        if index in self.exact:
            return self.exact[index]
        for every, fault in self.cadences:
            if index % every == 0:
                return fault
        return None

    def __bool__(self) -> bool:
        return bool(self.exact or self.cadences)


def _fault(text: str, part: str) -> str:
    if text in (DROP, HANG):
        return text
    if text.isdigit() and 400 <= int(text) <= 599:
        return text
    raise FaultSpecError(
        f"--agentbench-faults: {part!r}: the fault must be an HTTP status from 400 to 599, "
        f"'drop' or 'hang', not {text!r}"
    )


def _count(text: str, part: str, what: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise FaultSpecError(
            f"--agentbench-faults: {part!r}: {what} must be a whole number from 1, not {text!r}"
        )
    return int(text)


def parse_faults(spec: str) -> FaultSchedule:
    """Read `N:STATUS,every:K:STATUS,...`; an empty spec schedules nothing."""
    exact: dict[int, str] = {}
    cadences: list[tuple[int, str]] = []
    for raw in spec.split(","):
        part = raw.strip()
        if not part:
            continue
        fields = part.split(":")
        if len(fields) == 3 and fields[0] == "every":
            cadences.append((_count(fields[1], part, "K"), _fault(fields[2], part)))
        elif len(fields) == 2 and fields[0] != "every":
            index = _count(fields[0], part, "N")
            if index in exact:
                raise FaultSpecError(f"--agentbench-faults: request {index} is listed twice")
            exact[index] = _fault(fields[1], part)
        else:
            raise FaultSpecError(
                f"--agentbench-faults: {part!r} is neither N:STATUS nor every:K:STATUS "
                "(e.g. '3:429' or 'every:2:500')"
            )
    return FaultSchedule(exact, tuple(cadences))
