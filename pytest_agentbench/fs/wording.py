"""Counts in words, so every line reads "1 trial", "2 trials", "0 trials"."""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`count` followed by `noun`, or by its plural (`nouns`, by default `noun` + "s")."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"
