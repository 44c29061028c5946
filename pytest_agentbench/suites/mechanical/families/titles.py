"""Select test blocks by their exact title among blocks with near-identical titles."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from pytest_agentbench.suites.mechanical.families.text import distinct_phrases, filler, join_lines
from pytest_agentbench.suites.mechanical.prompt import quote
from pytest_agentbench.suites.mechanical.spec import Context, Edit, Family

PATH = "tests/compute.test.js"
SETUP = "  setup();"
LINES_PER_BLOCK = 6


@dataclass(frozen=True)
class Block:
    title: str
    body: tuple[str, ...]

    def render(self) -> list[str]:
        return [f'test("{self.title}", () => {{', *self.body, "});", ""]


def _body(number: int) -> tuple[str, ...]:
    return (
        f"  const input = {number};",
        SETUP,
        f"  expect(compute(input)).toBe({number * 2});",
    )


def _blocks(ctx: Context, listed: int) -> tuple[list[Block], list[int]]:
    """Blocks for a file of about ctx.size lines; `listed` of them (returned by index)
    carry the selected titles, and each selected title has look-alike twins with the
    same body elsewhere in the file."""
    rng, twin = ctx.rng, ctx.twin
    total = max(listed * 3, ctx.size // LINES_PER_BLOCK)
    bases = distinct_phrases(rng, listed)
    traps = [rng.below(97) for _ in bases]
    titles = [twin.value(b, k) for b, k in zip(bases, traps, strict=True)]
    blocks: list[Block | None] = [None] * total
    chosen = sorted(rng.sample(range(total), listed))
    free = [i for i in range(total) if i not in chosen]
    for index, base, k, title in zip(chosen, bases, traps, titles, strict=True):
        body = _body(rng.randint(2, 500))
        blocks[index] = Block(title, body)
        spellings = [d for d in twin.decoys(base, k) if d not in titles]
        for decoy in rng.sample(spellings, min(2, len(spellings))):
            blocks[free.pop(rng.below(len(free)))] = Block(decoy, body)
    for slot in free:
        title = twin.value(filler(rng, bases), rng.below(97))
        blocks[slot] = Block(title, _body(rng.randint(2, 500)))
    complete = [b for b in blocks if b is not None]
    counts = Counter(b.title for b in complete)
    for title in titles:
        if counts[title] != 1:
            raise AssertionError(f"{ctx.spec.id}: title {title!r} is not unique")
    return complete, chosen


def _render(blocks: list[Block]) -> str:
    return join_lines(line for block in blocks for line in block.render())


def _title_one(ctx: Context) -> Edit:
    blocks, (index,) = _blocks(ctx, 1)
    target = blocks[index]
    old_line = target.body[2]
    new_line = old_line.replace(").toBe(", ").toStrictEqual(")
    after = list(blocks)
    after[index] = replace(target, body=(*target.body[:2], new_line))
    return Edit(
        f"In the file {quote(PATH)}, in the test block whose title is exactly "
        f"{quote(target.title)}, replace the line {quote(old_line)} with {quote(new_line)}. "
        "Blocks whose titles merely look similar stay unchanged.",
        {PATH: _render(blocks)},
        {PATH: _render(after)},
    )


def _subset_edit(case: str, body: tuple[str, ...]) -> tuple[str, ...]:
    at = body.index(SETUP)
    if case == "change":
        return (*body[:at], "  setup({ strict: true });", *body[at + 1 :])
    if case == "delete":
        return (*body[:at], *body[at + 1 :])
    return (*body[: at + 1], "  reset();", *body[at + 1 :])


_SUBSET_STEP = {
    "change": f"replace the line {quote(SETUP)} with {quote('  setup({ strict: true });')}",
    "delete": f"delete the line {quote(SETUP)}",
    "insert": f"insert the line {quote('  reset();')} right after the line {quote(SETUP)}",
}


def _title_subset(ctx: Context) -> Edit:
    listed = 3 if ctx.size < 1000 else 10
    blocks, chosen = _blocks(ctx, listed)
    after = list(blocks)
    for index in chosen:
        after[index] = replace(blocks[index], body=_subset_edit(ctx.case, blocks[index].body))
    titles = "\n".join(f"- {quote(blocks[i].title)}" for i in chosen)
    return Edit(
        f"In the file {quote(PATH)}, in each of the {listed} test blocks whose titles are "
        f"exactly the ones listed below, {_SUBSET_STEP[ctx.case]}. Every other block, "
        f"including blocks whose titles merely look similar, stays unchanged.\n{titles}",
        {PATH: _render(blocks)},
        {PATH: _render(after)},
    )


FAMILIES = (
    Family(
        "title-one",
        "Change one line in the one JavaScript test block whose exact title is given, "
        "while blocks with look-alike titles and identical bodies stay unchanged.",
        ("s100", "s1000", "s10000"),
        _title_one,
        language="javascript",
    ),
    Family(
        "title-subset",
        "Change, delete or insert a line in each block of a listed subset of exact "
        "titles; look-alike titles share the same bodies and must stay unchanged.",
        ("s100", "s1000"),
        _title_subset,
        cases=("change", "delete", "insert"),
        language="javascript",
    ),
)
