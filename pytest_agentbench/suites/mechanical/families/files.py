"""Edits that test file handling itself: BOM, CRLF, whitespace, create, delete, move."""

from __future__ import annotations

from pytest_agentbench.suites.mechanical.families.text import (
    WORDS,
    count_or_fail,
    distinct_phrases,
    filler,
    join_lines,
)
from pytest_agentbench.suites.mechanical.prompt import quote
from pytest_agentbench.suites.mechanical.rng import HashRandom
from pytest_agentbench.suites.mechanical.spec import Context, Edit, Family
from pytest_agentbench.suites.mechanical.unicode import TRAPS

BOM = "\ufeff"
# Traps that keep file names distinct on every common file system (no case or
# normalization folding): a name differs from its decoys in one code point.
_NAME_TRAPS = ("zwsp", "nb_hyphen", "minus", "cyrillic")


def _replace_in_lines(ctx: Context, lines: list[str], old: str, new: str, where: str) -> list[str]:
    count_or_fail("\n".join(lines), old, 1, where)
    return [line.replace(old, new) for line in lines]


def _values(ctx: Context) -> tuple[str, str, list[str]]:
    """Old and new spelling, and ctx.size values where exactly one is old."""
    rng, twin = ctx.rng, ctx.twin
    base, new_base = distinct_phrases(rng, 2)
    k = rng.below(97)
    old, new = twin.value(base, k), twin.value(new_base, k + 1)
    decoys = twin.decoys(base, k)
    target = rng.below(ctx.size)
    values = [
        old
        if i == target
        else rng.choice(decoys)
        if rng.below(3) == 0
        else twin.value(filler(rng, {base}), rng.below(97))
        for i in range(ctx.size)
    ]
    return old, new, values


def _bom(ctx: Context) -> Edit:
    path = "data/table.csv"
    old, new, values = _values(ctx)
    lines = ["key,name,count", *(f"item_{i:05d},{v},{i * 7 % 100}" for i, v in enumerate(values))]
    after = _replace_in_lines(ctx, lines, old, new, ctx.spec.id)
    return Edit(
        f"The file {quote(path)} starts with a UTF-8 byte order mark; keep it. In that file, "
        f"replace the only occurrence of {quote(old)} with {quote(new)}.",
        {path: BOM + join_lines(lines)},
        {path: BOM + join_lines(after)},
    )


def _crlf(ctx: Context) -> Edit:
    path = "config/app.ini"
    old, new, values = _values(ctx)
    lines = ["[catalog]", *(f"name{i:05d} = {v}" for i, v in enumerate(values))]
    after = _replace_in_lines(ctx, lines, old, new, ctx.spec.id)
    return Edit(
        f"The file {quote(path)} uses CRLF line endings throughout; keep them. In that file, "
        f"replace the only occurrence of {quote(old)} with {quote(new)}.",
        {path: join_lines(lines, "\r\n")},
        {path: join_lines(after, "\r\n")},
    )


def _whitespace(ctx: Context) -> Edit:
    path = "src/legacy.py"
    rng = ctx.rng
    old, new, values = _values(ctx)
    lines = ["def table():", "    rows = []"]
    for value in values:
        indent = rng.choice(("    ", "\t", "  \t", "\t    "))
        trailing = rng.choice(("", "", " ", "  ", "\t"))
        lines.append(f'{indent}rows.append("{value}"){trailing}')
    lines.append("    return rows")
    after = _replace_in_lines(ctx, lines, old, new, ctx.spec.id)
    return Edit(
        f"The file {quote(path)} mixes tabs and spaces and has trailing whitespace; keep all "
        f"of it as it is. In that file, replace the only occurrence of {quote(old)} "
        f"with {quote(new)}.",
        {path: join_lines(lines)},
        {path: join_lines(after)},
    )


def _create(ctx: Context) -> Edit:
    rng, twin = ctx.rng, ctx.twin
    sibling = "docs/guide/intro.md"
    path = f"docs/guide/{rng.choice(WORDS)}-{rng.randint(10, 99)}/notes.md"
    lines = [f"# {twin.value(filler(rng), rng.below(97))}", ""]
    lines += [f"- {twin.value(filler(rng), rng.below(97))}" for _ in range(ctx.size - 2)]
    content = join_lines(lines)
    intro = "# Guide\n\nSee the notes in the folders beside this file.\n"
    return Edit(
        f"Create the file {quote(path)} (with any missing directories) holding exactly "
        f"the text {quote(content)}.",
        {sibling: intro},
        {sibling: intro, path: content},
    )


def _stem(rng: HashRandom) -> str:
    return f"{rng.choice(WORDS)}-{rng.randint(10, 99)}"


def _names(ctx: Context, count: int) -> tuple[str, list[str]]:
    """count distinct file stems: the target first, then its look-alikes, then others."""
    rng = ctx.rng
    base = _stem(rng)
    if ctx.twin.unicode:
        trap = rng.choice(_NAME_TRAPS)
        target = TRAPS[trap](base)
        lookalikes = [base] + [TRAPS[t](base) for t in _NAME_TRAPS if t != trap]
    else:
        target = base
        word, number = base.rsplit("-", 1)
        lookalikes = [f"{word}-{int(number) + 1}", f"{word}_{number}", f"{word}-{number}-old"]
    names = [target, *lookalikes][:count]
    while len(names) < count:
        stem = _stem(rng)
        if stem not in names:
            names.append(stem)
    return target, names


def _folder_files(ctx: Context, folder: str, ext: str) -> tuple[str, dict[str, str]]:
    """ctx.size files in folder (the top level for a single file); returns the target path."""
    target, stems = _names(ctx, ctx.size)
    prefix = f"{folder}/" if ctx.size > 1 else ""
    files = {
        f"{prefix}{stem}{ext}": join_lines([f"# {stem}", ctx.twin.value(filler(ctx.rng), i)])
        for i, stem in enumerate(stems)
    }
    return f"{prefix}{target}{ext}", files


def _delete(ctx: Context) -> Edit:
    target, files = _folder_files(ctx, "logs", ".log")
    return Edit(
        f"Delete the file {quote(target)}. Files whose names look similar stay.",
        files,
        {path: text for path, text in files.items() if path != target},
    )


def _move(ctx: Context) -> Edit:
    source, files = _folder_files(ctx, "drafts", ".md")
    stem = source.rsplit("/", 1)[-1].removesuffix(".md")
    destination = f"archive/2024/q3/{stem}-final.md"
    after = {path: text for path, text in files.items() if path != source}
    after[destination] = files[source]
    return Edit(
        f"Move the file {quote(source)} to {quote(destination)} (create the directories), "
        "keeping its content byte for byte. Files whose names look similar stay.",
        files,
        after,
    )


FAMILIES = (
    Family(
        "file-bom",
        "Edit one value in a CSV file that starts with a UTF-8 byte order mark, which must stay.",
        ("s10", "s1000"),
        _bom,
        language="csv",
    ),
    Family(
        "file-crlf",
        "Edit one value in a file with CRLF line endings throughout; every CRLF must stay.",
        ("s10", "s1000"),
        _crlf,
        language="ini",
    ),
    Family(
        "file-whitespace",
        "Edit one value in a file with trailing whitespace and mixed tab/space indentation, "
        "all of which must stay.",
        ("s10", "s1000"),
        _whitespace,
        language="python",
    ),
    Family(
        "file-create",
        "Create a file in a new nested directory with exactly the given content.",
        ("s10", "s100"),
        _create,
        language="markdown",
    ),
    Family(
        "file-delete",
        "Delete one file among files with look-alike names.",
        ("f1", "f10", "f100"),
        _delete,
    ),
    Family(
        "file-move",
        "Rename and move one file into a new nested directory, content unchanged, among "
        "files with look-alike names.",
        ("f1", "f10", "f100"),
        _move,
    ),
)
