"""Blocks between marker lines: replace, delete, move, copy and insert them, in one
file or between two files, while a block with a look-alike marker stays put."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pytest_agentbench.suites.mechanical.families.text import WORDS, distinct_phrases, filler
from pytest_agentbench.suites.mechanical.prompt import quote
from pytest_agentbench.suites.mechanical.spec import Context, Edit, Family

MAIN = "config/sections.conf"
OTHER = "config/extra.conf"
LARGE_PAYLOAD_LINES = 150


@dataclass(frozen=True)
class Section:
    name: str
    body: tuple[str, ...]

    @property
    def begin(self) -> str:
        return f"# >>> begin {self.name}"

    @property
    def end(self) -> str:
        return f"# <<< end {self.name}"

    def lines(self) -> list[str]:
        return [self.begin, *self.body, self.end]


Item = str | Section


def _body_line(ctx: Context) -> str:
    key = ctx.rng.choice(WORDS)
    return f"  {key} = {ctx.twin.value(filler(ctx.rng), ctx.rng.below(97))}"


def _body(ctx: Context, count: int) -> tuple[str, ...]:
    return tuple(_body_line(ctx) for _ in range(count))


def _document(ctx: Context, size: int, named: int) -> tuple[list[Item], list[Section]]:
    """A file of about `size` lines of sections and plain lines. The `named` sections
    are returned; each has a decoy section with a look-alike name and the same body."""
    rng, twin = ctx.rng, ctx.twin
    bases = distinct_phrases(rng, named)
    traps = [rng.below(97) for _ in bases]
    names = [twin.value(b, k) for b, k in zip(bases, traps, strict=True)]
    chosen = [Section(name, _body(ctx, rng.randint(2, 4))) for name in names]
    sections = list(chosen)
    for base, k, section in zip(bases, traps, chosen, strict=True):
        spellings = [d for d in twin.decoys(base, k) if d not in names]
        sections.append(Section(rng.choice(spellings), section.body))
    while len(sections) < size // 10:
        sections.append(Section(twin.value(filler(rng, bases), rng.below(97)), _body(ctx, 3)))
    order = rng.sample(sections, len(sections))
    used = sum(len(s.lines()) for s in sections)
    gap = max(1, (size - used) // (len(order) + 1))
    items: list[Item] = []
    for section in order:
        items.extend(_body_line(ctx).strip() for _ in range(gap))
        items.append(section)
    items.extend(_body_line(ctx).strip() for _ in range(gap))
    lines = _lines(items)
    for section in chosen:
        if lines.count(section.begin) != 1 or lines.count(section.end) != 1:
            raise AssertionError(f"{ctx.spec.id}: marker of {section.name!r} is not unique")
    return items, chosen


def _lines(items: list[Item]) -> list[str]:
    out: list[str] = []
    for item in items:
        out.extend(item.lines() if isinstance(item, Section) else [item])
    return out


def _render(items: list[Item]) -> str:
    return "".join(line + "\n" for line in _lines(items))


def _block_text(lines: tuple[str, ...] | list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _span(section: Section) -> str:
    return f"the block from the line {quote(section.begin)} through the line {quote(section.end)}"


def _put_after(items: list[Item], anchor: Section, moved: Section) -> list[Item]:
    at = items.index(anchor) + 1
    return [*items[:at], moved, *items[at:]]


def _replace(ctx: Context) -> Edit:
    items, (target,) = _document(ctx, ctx.size, 1)
    new_body = _body(ctx, ctx.rng.randint(2, 5))
    after = [Section(target.name, new_body) if i is target else i for i in items]
    return Edit(
        f"In the file {quote(MAIN)}, replace the lines between the line {quote(target.begin)} "
        f"and the line {quote(target.end)} with the text {quote(_block_text(new_body))}. "
        "Keep both marker lines.",
        {MAIN: _render(items)},
        {MAIN: _render(after)},
    )


def _delete(ctx: Context) -> Edit:
    items, (target,) = _document(ctx, ctx.size, 1)
    return Edit(
        f"In the file {quote(MAIN)}, delete {_span(target)}, both marker lines included.",
        {MAIN: _render(items)},
        {MAIN: _render([i for i in items if i is not target])},
    )


def _move(ctx: Context) -> Edit:
    items, (target, anchor) = _document(ctx, ctx.size, 2)
    after = _put_after([i for i in items if i is not target], anchor, target)
    return Edit(
        f"In the file {quote(MAIN)}, move {_span(target)} (both included) so that it comes "
        f"immediately after the line {quote(anchor.end)}.",
        {MAIN: _render(items)},
        {MAIN: _render(after)},
    )


def _copy(ctx: Context) -> Edit:
    items, (target, anchor) = _document(ctx, ctx.size, 2)
    return Edit(
        f"In the file {quote(MAIN)}, insert a copy of {_span(target)} (both included) "
        f"immediately after the line {quote(anchor.end)}; the original stays where it is.",
        {MAIN: _render(items)},
        {MAIN: _render(_put_after(items, anchor, target))},
    )


def _between_files(ctx: Context, move: bool) -> Edit:
    items, (target,) = _document(ctx, ctx.size, 1)
    other, (anchor,) = _document(ctx, max(10, ctx.size // 2), 1)
    source_after = [i for i in items if i is not target] if move else items
    verb = "move" if move else "insert a copy of"
    rest = "it is removed from" if move else "leave unchanged"
    return Edit(
        f"{verb.capitalize()} {_span(target)} (both included) of the file {quote(MAIN)} "
        f"into the file {quote(OTHER)}, immediately after the line {quote(anchor.end)} "
        f"there; {rest} {quote(MAIN)}.",
        {MAIN: _render(items), OTHER: _render(other)},
        {MAIN: _render(source_after), OTHER: _render(_put_after(other, anchor, target))},
    )


def _insert(ctx: Context) -> Edit:
    items, (target,) = _document(ctx, ctx.size, 1)
    block = _body(ctx, ctx.rng.randint(2, 5))
    grown = Section(target.name, (*block, *target.body))
    return Edit(
        f"In the file {quote(MAIN)}, insert the text {quote(_block_text(block))} "
        f"immediately after the line {quote(target.begin)}.",
        {MAIN: _render(items)},
        {MAIN: _render([grown if i is target else i for i in items])},
    )


def _insert_large(ctx: Context) -> Edit:
    items, (target,) = _document(ctx, ctx.size, 1)
    payload = tuple(
        f"  entry_{i:03d} = {_body_line(ctx).strip()}" for i in range(LARGE_PAYLOAD_LINES)
    )
    grown = Section(target.name, (*target.body, *payload))
    return Edit(
        f"In the file {quote(MAIN)}, insert the following text ({LARGE_PAYLOAD_LINES} lines) "
        f"immediately before the line {quote(target.end)}:\n{quote(_block_text(payload))}",
        {MAIN: _render(items)},
        {MAIN: _render([grown if i is target else i for i in items])},
    )


def _family(
    name: str, summary: str, make: Callable[[Context], Edit], large: bool = False
) -> Family:
    scales = ("s10", "s100", "s1000", "s10000") if large else ("s10", "s100", "s1000")
    return Family(name, summary, scales, make)


FAMILIES = (
    _family(
        "block-replace",
        "Replace the lines between two marker lines, keeping the markers.",
        _replace,
    ),
    _family("block-delete", "Delete a block together with its marker lines.", _delete, large=True),
    _family(
        "block-move",
        "Move a block (markers included) to right after another block's end marker.",
        _move,
        large=True,
    ),
    _family("block-copy", "Copy a block within its file to right after another marker.", _copy),
    _family(
        "block-copy-file",
        "Copy a block into another file after a marker there; the source stays unchanged.",
        lambda ctx: _between_files(ctx, move=False),
    ),
    _family(
        "block-move-file",
        "Move a block from one file into another file after a marker there.",
        lambda ctx: _between_files(ctx, move=True),
    ),
    _family("block-insert", "Insert a given block right after a begin marker.", _insert),
    _family(
        "block-insert-large",
        f"Insert a large payload ({LARGE_PAYLOAD_LINES} lines given in the prompt) right "
        "before an end marker.",
        _insert_large,
    ),
)
