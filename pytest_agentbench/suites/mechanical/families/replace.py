"""Replace a literal value: once among look-alikes, everywhere, across files, per file."""

from __future__ import annotations

from pytest_agentbench.suites.mechanical.families.text import (
    count_or_fail,
    distinct_phrases,
    filler,
    join_lines,
    plural,
)
from pytest_agentbench.suites.mechanical.prompt import quote
from pytest_agentbench.suites.mechanical.spec import Context, Edit, Family


def _value_lines(ctx: Context, count: int, base: str, k: int, planted: set[int], prefix: str):
    """count lines `<prefix><i>: value`; planted lines hold the target spelling,
    about a third of the rest a decoy spelling, the others unrelated values."""
    rng, twin = ctx.rng, ctx.twin
    target = twin.value(base, k)
    decoys = twin.decoys(base, k)
    lines = []
    for i in range(count):
        if i in planted:
            value = target
        elif rng.below(3) == 0:
            value = rng.choice(decoys)
        else:
            value = twin.value(filler(rng, {base}), rng.below(97))
        lines.append(f"{prefix}{i:05d} = {value}")
    return lines


def _replace_one(ctx: Context) -> Edit:
    rng, twin, path = ctx.rng, ctx.twin, "data/entries.txt"
    base, new_base = distinct_phrases(rng, 2)
    k = rng.below(97)
    old, new = twin.value(base, k), twin.value(new_base, k + 1)
    lines = _value_lines(ctx, ctx.size, base, k, {rng.below(ctx.size)}, "entry.")
    before = join_lines(lines)
    count_or_fail(before, old, 1, ctx.spec.id)
    return Edit(
        f"In the file {quote(path)}, replace the only occurrence of {quote(old)} "
        f"with {quote(new)}.",
        {path: before},
        {path: before.replace(old, new)},
    )


def _replace_all(ctx: Context) -> Edit:
    rng, twin, path = ctx.rng, ctx.twin, "src/messages.properties"
    base, new_base = distinct_phrases(rng, 2)
    k = rng.below(97)
    old, new = twin.value(base, k), twin.value(new_base, k + 1)
    count = max(2, ctx.size // 20)
    planted = set(rng.sample(range(ctx.size), count))
    before = join_lines(_value_lines(ctx, ctx.size, base, k, planted, "message."))
    count_or_fail(before, old, count, ctx.spec.id)
    return Edit(
        f"In the file {quote(path)}, replace all {count} occurrences of {quote(old)} "
        f"with {quote(new)}.",
        {path: before},
        {path: before.replace(old, new)},
    )


def _replace_files(ctx: Context) -> Edit:
    rng, twin = ctx.rng, ctx.twin
    base, new_base = distinct_phrases(rng, 2)
    k = rng.below(97)
    old, new = twin.value(base, k), twin.value(new_base, k + 1)
    before: dict[str, str] = {}
    total = 0
    for index in range(ctx.size):
        planted = set(rng.sample(range(8), rng.randint(1, 2)))
        total += len(planted)
        lines = _value_lines(ctx, 8, base, k, planted, "option.")
        before[f"conf/service_{index:03d}.cfg"] = join_lines(lines)
    decoy = "conf/defaults.cfg.orig"
    before[decoy] = join_lines(_value_lines(ctx, 8, base, k, {2, 5}, "option."))
    after = {
        path: text if path == decoy else text.replace(old, new) for path, text in before.items()
    }
    count_or_fail("".join(before.values()), old, total + 2, ctx.spec.id)
    return Edit(
        f'In every file whose name ends in ".cfg" directly inside the directory '
        f"{quote('conf')} ({plural(ctx.size, 'file')}), replace every occurrence of "
        f"{quote(old)} with {quote(new)} ({plural(total, 'occurrence')} in all). Other files "
        "stay as they are.",
        before,
        after,
    )


def _replace_per_file(ctx: Context) -> Edit:
    rng, twin, count = ctx.rng, ctx.twin, ctx.size
    bases = distinct_phrases(rng, 2 * count)
    olds = [twin.value(b, i) for i, b in enumerate(bases[:count])]
    news = [twin.value(b, i + 1) for i, b in enumerate(bases[count:])]
    before: dict[str, str] = {}
    after: dict[str, str] = {}
    steps = []
    for i in range(count):
        path = f"locale/part_{i:03d}.txt"
        neighbour = olds[(i + 1) % count]
        lines = [
            f"# part {i}",
            f"title = {olds[i]}",
            f"see_also = {neighbour}",
            f"weight = {rng.randint(1, 99)}",
        ]
        text = join_lines(lines)
        count_or_fail(text, olds[i], 1, f"{ctx.spec.id} {path}")
        before[path] = text
        after[path] = text.replace(olds[i], news[i])
        steps.append(f"- in {quote(path)}: replace {quote(olds[i])} with {quote(news[i])}")
    return Edit(
        "Each file below holds its own value once. In each file, replace that value with the "
        "replacement given for that file, and change nothing else in it (a value listed for "
        "another file stays as it is):\n" + "\n".join(steps),
        before,
        after,
    )


FAMILIES = (
    Family(
        "replace-one",
        "Replace the only occurrence of a value in a file among many lines that hold "
        "near-identical spellings of it.",
        ("s10", "s100", "s1000", "s10000"),
        _replace_one,
    ),
    Family(
        "replace-all",
        "Replace all N occurrences of a value in one file, leaving its near-identical "
        "spellings alone.",
        ("s10", "s100", "s1000", "s10000"),
        _replace_all,
    ),
    Family(
        "replace-files",
        "Replace a value in every .cfg file of a directory while a decoy file beside "
        "them (defaults.cfg.orig) holds the value too and must stay unchanged.",
        ("f1", "f10", "f100"),
        _replace_files,
    ),
    Family(
        "replace-per-file",
        "A different replacement in each file, where each file also holds the value "
        "meant for its neighbour, which must stay.",
        ("f3", "f10", "f100"),
        _replace_per_file,
    ),
)
