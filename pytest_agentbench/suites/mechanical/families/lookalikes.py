"""Fix one line while a line that looks the same (but is not) stays byte-identical."""

from __future__ import annotations

from pytest_agentbench.suites.mechanical.families.text import WORDS, join_lines
from pytest_agentbench.suites.mechanical.prompt import quote
from pytest_agentbench.suites.mechanical.rng import HashRandom
from pytest_agentbench.suites.mechanical.spec import Context, Edit, Family
from pytest_agentbench.suites.mechanical.unicode import (
    E_ACUTE_NFC,
    E_ACUTE_NFD,
    MINUS,
    NARROW_NBSP,
    NB_HYPHEN,
    NBSP,
    TRAPS,
    WORD_JOINER,
    ZWSP,
)

PATH = "config/app.conf"
_ASCII_LETTER_LOOKALIKES = (("m", "rn"), ("d", "cl"), ("l", "I"), ("o", "0"))


def _plain_lookalike(case: str, key: str, rng: HashRandom) -> str:
    if case == "letters":
        options = [key.replace(a, b, 1) for a, b in _ASCII_LETTER_LOOKALIKES if a in key]
        return rng.choice(options)
    if case == "spaces":
        return key.replace(" ", rng.choice(("  ", "\t")), 1)
    if case == "dashes":
        return key.replace("-", rng.choice(("_", "--")), 1)
    return key + rng.choice((" ", "\t"))  # marks: trailing blanks nobody sees


def _unicode_lookalike(case: str, key: str, rng: HashRandom) -> str:
    if case == "letters":
        return TRAPS["cyrillic"](key)
    if case == "spaces":
        return key.replace(" ", rng.choice((NBSP, NARROW_NBSP)), 1)
    if case == "dashes":
        return key.replace("-", rng.choice((NB_HYPHEN, MINUS)), 1)
    mark = rng.choice((ZWSP, WORD_JOINER, E_ACUTE_NFD))
    if mark == E_ACUTE_NFD:
        return key.replace(E_ACUTE_NFC, E_ACUTE_NFD, 1)
    return TRAPS["zwsp" if mark == ZWSP else "word_joiner"](key)


def _lookalike(ctx: Context) -> Edit:
    rng, unicode, case = ctx.rng, ctx.twin.unicode, ctx.case
    first, second = rng.sample(WORDS, 2)
    # "limit" gives the ASCII letter lookalikes (m, l) something to work on;
    # "caf\u00e9" gives the Unicode twin its NFC/NFD pair.
    key = f"{first}-{second} {'caf' + E_ACUTE_NFC if unicode else 'limit'}"
    twin_key = (_unicode_lookalike if unicode else _plain_lookalike)(case, key, rng)
    old_value = rng.randint(10, 499)
    new_value = old_value + rng.randint(1, 500)
    target, lookalike = f"set {key} to {old_value}", f"set {twin_key} to {old_value}"
    fixed = f"set {key} to {new_value}"
    count = max(ctx.size, 4)
    lines = []
    for _ in range(count - 2):
        a, b = rng.sample(WORDS, 2)
        lines.append(
            f"set {a}-{b} {rng.choice(('size', 'depth', 'level'))} to {rng.randint(1, 999)}"
        )
    at = rng.below(count - 1)
    lines[at:at] = [target, lookalike] if rng.below(2) else [lookalike, target]
    if lines.count(target) != 1 or target == lookalike:
        raise AssertionError(f"{ctx.spec.id}: target line is not unique")
    after = [fixed if line == target else line for line in lines]
    return Edit(
        f"In the file {quote(PATH)}, replace the line {quote(target)} with {quote(fixed)}. "
        "Another line looks the same but is not: it stays byte-identical.",
        {PATH: join_lines(lines)},
        {PATH: join_lines(after)},
    )


FAMILIES = (
    Family(
        "lookalike",
        "Correct one line while a line that looks like it stays byte-identical: "
        "ASCII lookalikes (rn/m, l/I, 0/o, double space or tab, _ or -- for -, trailing "
        "blanks) in the plain variant; Cyrillic letters, NBSP or narrow NBSP, "
        "non-breaking hyphen or minus, zero-width characters or NFD e-acute in the twin.",
        ("s10", "s1000"),
        _lookalike,
        cases=("letters", "spaces", "dashes", "marks"),
    ),
)
