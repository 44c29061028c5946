"""The shapes every benchmark shares: a context, figures over several runs and a verdict."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Context:
    """What a benchmark run may use: the quick flag and a scratch directory of its own."""

    quick: bool
    scratch: Path

    def runs(self, full: int, quick: int = 1) -> int:
        """How many times to repeat a measurement in this mode."""
        return quick if self.quick else full


@dataclass(frozen=True)
class Target:
    """A bound on one figure: ``ratio <= 1.5``, ``value < 2.0`` ..."""

    of: str  # "ratio" or "value"
    op: str  # "<=", "<", ">=", ">"
    bound: float

    def met(self, figure: float | None) -> bool:
        if figure is None:
            return False
        return {
            "<=": figure <= self.bound,
            "<": figure < self.bound,
            ">=": figure >= self.bound,
            ">": figure > self.bound,
        }[self.op]

    def text(self) -> str:
        return f"{self.of} {self.op} {self.bound:g}"


@dataclass(frozen=True)
class Benchmark:
    """One measurement module's entry: ``run(ctx)`` returns its checks."""

    name: str
    title: str
    run: Callable[[Context], list[dict[str, Any]]]


def stats(samples: Sequence[float]) -> dict[str, Any]:
    """min, median and max of the samples, and the samples themselves."""
    values = [float(v) for v in samples]
    return {
        "min": min(values),
        "median": statistics.median(values),
        "max": max(values),
        "runs": len(values),
        "samples": [round(v, 6) for v in values],
    }


def _ratio(value: float, floor: float, way: str) -> float | None:
    top, bottom = (value, floor) if way == "value/floor" else (floor, value)
    return top / bottom if bottom > 0 else None  # a non-positive floor is noise


def check(
    name: str,
    *,
    unit: str,
    value: Sequence[float],
    target: Target,
    floor: Sequence[float] | None = None,
    floor_is: str = "",
    ratio: str = "value/floor",
    paired: bool = False,
    note: str = "",
    **extra: Any,
) -> dict[str, Any]:
    """One figure: the subject's stats, the floor's, their ratio and the verdict.

    ``ratio`` says which way round: "value/floor" (a cost) or "floor/value" (a speed-up).
    ``paired``: sample i of the subject and of the floor were measured one right after the
    other, so the ratio is the median of the pairs' ratios. A slow phase of a shared machine
    then moves both halves of a pair instead of whichever side it happened to hit. Without
    pairs it is the ratio of the medians; the JSON has that one in either case.
    """
    subject = stats(value)
    floor_stats = stats(floor) if floor else None
    figure_ratio = medians_ratio = None
    if floor_stats is not None and floor is not None:
        medians_ratio = _ratio(subject["median"], floor_stats["median"], ratio)
        figure_ratio = medians_ratio
        if paired and len(floor) == len(value):
            pairs = [_ratio(v, f, ratio) for v, f in zip(value, floor, strict=True)]
            known = [r for r in pairs if r is not None]
            figure_ratio = statistics.median(known) if known else None
    judged = figure_ratio if target.of == "ratio" else subject["median"]
    return {
        "name": name,
        "unit": unit,
        "value": subject,
        "floor": floor_stats,
        "floor_is": floor_is,
        "ratio": None if figure_ratio is None else round(figure_ratio, 4),
        "ratio_is": ratio if floor_stats is not None else None,
        "ratio_method": (
            None if floor_stats is None else "median of paired ratios" if paired else "medians"
        ),
        "ratio_of_medians": None if medians_ratio is None else round(medians_ratio, 4),
        "target": target.text(),
        "passed": target.met(judged),
        "note": note,
        **extra,
    }
