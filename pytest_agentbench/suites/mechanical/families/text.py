"""Shared vocabulary and line helpers for the families."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from pytest_agentbench.suites.mechanical.rng import HashRandom

# Every word holds an "e" and a letter with a Cyrillic lookalike, so each trap applies.
WORDS = (
    "amber",
    "cedar",
    "delta",
    "ember",
    "fennel",
    "hazel",
    "juniper",
    "lemon",
    "maple",
    "nectar",
    "pepper",
    "river",
    "silver",
    "tender",
    "velvet",
    "wheat",
)


def phrase(rng: HashRandom, words: Sequence[str] = WORDS) -> str:
    """A value like "ember-42 silver": it holds a hyphen, a space and an "e"."""
    return f"{rng.choice(words)}-{rng.randint(10, 99)} {rng.choice(words)}"


def distinct_phrases(rng: HashRandom, count: int, words: Sequence[str] = WORDS) -> list[str]:
    """count different phrases (in draw order)."""
    seen: dict[str, None] = {}
    while len(seen) < count:
        seen.setdefault(phrase(rng, words), None)
    return list(seen)


def join_lines(lines: Iterable[str], eol: str = "\n", final: bool = True) -> str:
    """Lines joined with eol, with (or without) a final line ending."""
    text = eol.join(lines)
    return text + eol if final else text


def count_or_fail(text: str, needle: str, expected: int, where: str) -> None:
    """Generation guard: a literal edit is sound only if the needle occurs as planned."""
    found = text.count(needle)
    if found != expected:
        raise AssertionError(f"{where}: {needle!r} occurs {found} times, planned {expected}")


def filler(rng: HashRandom, avoid: Collection[str] = (), words: Sequence[str] = WORDS) -> str:
    """A random phrase not in avoid (so a planned value stays unique)."""
    while True:
        candidate = phrase(rng, words)
        if candidate not in avoid:
            return candidate


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
