"""Counts in words, so every line reads "1 trial", "2 trials", "0 trials"; rate differences
in one unit, percentage points."""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`count` followed by `noun`, or by its plural (`nouns`, by default `noun` + "s")."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def points(value: float | None, digits: int = 1) -> str:
    """A difference of two rates in percentage points, signed: 0.125 -> "+12.5 pts" (never
    "-0.0"); unknown spelt out."""
    if value is None:
        return "unknown"
    return f"{round(100 * value, digits) + 0.0:+.{digits}f} pts"


def quoted(value: object) -> str:
    """A setting's value as a reader sees it: quoted, or `unset` (never Python's None)."""
    return "unset" if value is None else repr(value)
