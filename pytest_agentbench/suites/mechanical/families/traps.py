"""Literal traps: text that tools misread as a pattern, a template or a line ending."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_agentbench.suites.mechanical.families.text import (
    count_or_fail,
    distinct_phrases,
    filler,
    join_lines,
)
from pytest_agentbench.suites.mechanical.prompt import quote
from pytest_agentbench.suites.mechanical.spec import Context, Edit, Family


@dataclass(frozen=True)
class Trap:
    """Templates where @W@ is the target phrase and @V@ the replacement phrase."""

    path: str
    old: str
    new: str
    decoys: tuple[str, ...]


TRAPS = {
    "regex": Trap(
        "src/patterns.txt",
        r"^@W@.*[0-9]+ (x|y)?\d{2}$",
        r"[@V@]+(a|b)*?{3}\.",
        (r"@W@-42 x12", r"^@W@.*[0-9]+ (x|y)?\d{3}$", r"^@W@.*[0-9]* (x|y)?\d{2}$"),
    ),
    "quotes": Trap(
        "src/strings.txt",
        'say "@W@" isn\'t `ready`',
        "say '@V@' \"is\" `done`",
        ("say '@W@' isn't `ready`", 'say "@W@" isn\'t "ready"', 'say \\"@W@\\" isn\'t `ready`'),
    ),
    "backslash": Trap(
        "config/paths.txt",
        r"C:\@W@\new\table\x41 \\server",
        r"D:\@V@\n\t\\share\\",
        (r"C:\\@W@\\new\\table\\x41 \\\\server", "C:/@W@/new/table/x41 //server"),
    ),
    "template": Trap(
        "templates/env.txt",
        "${@W@} $1 %s {0} & $$",
        r"\1 & $0 ${@V@:-x} %%",
        ("$@W@ $1 %s {0} & $$", "${@W@} $2 %s {0} & $$", "${@W@} $1 %d {0} & $$"),
    ),
    "tabs": Trap(
        "data/columns.tsv",
        "@W@\t\t\tend",
        "@V@\t\tend\t",
        ("@W@\t\tend", "@W@\t\t\t\tend", "@W@      end"),
    ),
    "crlf": Trap("data/mixed.txt", "@W@ = on", "@V@ = off", ("@W@ = off", "@W@ =  on")),
    "no-eol": Trap("data/tail.txt", "@W@ (final)", "@V@ (final)", ("@W@ (draft)", "@W@(final)")),
}


def _fill(template: str, word: str) -> str:
    """The template with its placeholder (@W@ in old text, @V@ in new text) filled."""
    return template.replace("@W@", word).replace("@V@", word)


def _literal_trap(ctx: Context) -> Edit:
    rng, twin, case = ctx.rng, ctx.twin, ctx.case
    trap = TRAPS[case]
    base, new_base = distinct_phrases(rng, 2)
    k = rng.below(97)
    word, new_word = twin.value(base, k), twin.value(new_base, k + 1)
    old, new = _fill(trap.old, word), _fill(trap.new, new_word)
    decoys = [_fill(d, word) for d in trap.decoys]
    decoys += [_fill(trap.old, spelling) for spelling in twin.decoys(base, k)]
    count = ctx.size
    target = count - 1 if case == "no-eol" else rng.below(count)
    lines = []
    for i in range(count):
        if i == target:
            value = old + ("\r" if case == "crlf" else "")
        elif rng.below(2) == 0:
            value = rng.choice(decoys)
        else:
            value = _fill(trap.old, twin.value(filler(rng, {base}), rng.below(97)))
        lines.append(f"line {i:05d}: {value}")
    before = join_lines(lines, final=case != "no-eol")
    count_or_fail(before, old, 1, ctx.spec.id)
    return Edit(
        f"In the file {quote(trap.path)}, replace the only occurrence of {quote(old)} "
        f"with {quote(new)}.",
        {trap.path: before},
        {trap.path: before.replace(old, new)},
    )


FAMILIES = (
    Family(
        "literal-trap",
        "Replace one literal value that a careless tool treats as something else: regex "
        "metacharacters, quotes, backslashes, template syntax (${}, $1, &, %s), a line "
        "ending in CRLF inside an LF file (the CR must stay), runs of tabs, and a last "
        "line without a final newline (none must be added).",
        ("s10", "s1000"),
        _literal_trap,
        cases=tuple(TRAPS),
    ),
)
