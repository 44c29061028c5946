"""The characters of the Unicode twins, and the two spellings of every variant.

A plain task uses ASCII text whose near-misses are ASCII too; its Unicode twin
spells the same text with an invisible or lookalike character, so that a decoy
can look exactly like the target while differing in its bytes.
"""

from __future__ import annotations

from collections.abc import Callable

ZWSP = "\u200b"  # zero-width space
WORD_JOINER = "\u2060"
NBSP = "\u00a0"  # no-break space
NARROW_NBSP = "\u202f"
NB_HYPHEN = "\u2011"  # non-breaking hyphen
MINUS = "\u2212"
E_ACUTE_NFC = "\u00e9"
E_ACUTE_NFD = "e\u0301"
CYRILLIC_LOOKALIKES = {
    "a": "\u0430",
    "c": "\u0441",
    "e": "\u0435",
    "o": "\u043e",
    "p": "\u0440",
    "x": "\u0445",
    "y": "\u0443",
}

VARIANTS = ("plain", "unicode")


def _insert_middle(text: str, mark: str) -> str:
    middle = len(text) // 2
    return text[:middle] + mark + text[middle:]


def _replace_first(old: str, new: str) -> Callable[[str], str]:
    def apply(text: str) -> str:
        if old not in text:
            return _insert_middle(text, ZWSP)
        return text.replace(old, new, 1)

    return apply


def _cyrillic(text: str) -> str:
    for index, char in enumerate(text):
        if char in CYRILLIC_LOOKALIKES:
            return text[:index] + CYRILLIC_LOOKALIKES[char] + text[index + 1 :]
    return _insert_middle(text, ZWSP)


# Each trap turns ASCII text into a spelling that renders (almost) the same.
# A trap whose anchor character is missing falls back to a zero-width space.
TRAPS: dict[str, Callable[[str], str]] = {
    "zwsp": lambda text: _insert_middle(text, ZWSP),
    "word_joiner": lambda text: _insert_middle(text, WORD_JOINER),
    "nbsp": _replace_first(" ", NBSP),
    "narrow_nbsp": _replace_first(" ", NARROW_NBSP),
    "nb_hyphen": _replace_first("-", NB_HYPHEN),
    "minus": _replace_first("-", MINUS),
    "nfc": _replace_first("e", E_ACUTE_NFC),
    "nfd": _replace_first("e", E_ACUTE_NFD),
    "cyrillic": _cyrillic,
}
TRAP_NAMES = tuple(TRAPS)


def disguise(text: str, k: int) -> str:
    """Text with the k-th trap (cyclically) applied; never equal to the input."""
    return TRAPS[TRAP_NAMES[k % len(TRAP_NAMES)]](text)


def ascii_near_misses(text: str) -> tuple[str, ...]:
    """ASCII spellings one small edit away from text (case, digit, separator)."""
    misses: list[str] = []
    first_alpha = next((i for i, c in enumerate(text) if c.isalpha()), None)
    if first_alpha is not None:
        c = text[first_alpha]
        misses.append(text[:first_alpha] + c.swapcase() + text[first_alpha + 1 :])
    last_digit = next((i for i in reversed(range(len(text))) if text[i].isdigit()), None)
    if last_digit is not None:
        bumped = str((int(text[last_digit]) + 1) % 10)
        misses.append(text[:last_digit] + bumped + text[last_digit + 1 :])
    if "-" in text:
        misses.append(text.replace("-", "_", 1))
    if " " in text:
        misses.append(text.replace(" ", "  ", 1))
    if not misses:
        misses.append(text + "s")
    return tuple(dict.fromkeys(m for m in misses if m != text))


class Twin:
    """Spells values for one variant: the target spelling and its decoys."""

    def __init__(self, variant: str) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")
        self.variant = variant
        self.unicode = variant == "unicode"

    def value(self, base: str, k: int) -> str:
        """How the task spells base: itself (plain) or with the k-th trap (unicode)."""
        return disguise(base, k) if self.unicode else base

    def decoys(self, base: str, k: int) -> tuple[str, ...]:
        """Spellings that look like value(base, k) but differ from it in their bytes."""
        target = self.value(base, k)
        if self.unicode:
            spellings = [base, *(disguise(base, j) for j in range(len(TRAP_NAMES)))]
        else:
            spellings = list(ascii_near_misses(base))
        return tuple(dict.fromkeys(s for s in spellings if s != target))
