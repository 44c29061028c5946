"""Edits in source and data files of many languages: one entry, all entries, a new entry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pytest_agentbench.suites.mechanical.families.text import (
    WORDS,
    count_or_fail,
    distinct_phrases,
    filler,
    join_lines,
)
from pytest_agentbench.suites.mechanical.prompt import quote
from pytest_agentbench.suites.mechanical.spec import Context, Edit, Family

ENTRIES = 40
SHARED_VALUE_ENTRIES = 4  # entries holding the value of lang-replace-all


@dataclass(frozen=True)
class Language:
    """A file layout: head lines, one line per (key, value) entry, tail lines.
    `@C@` in the head or tail is a comment that carries traps in the Unicode twin."""

    name: str
    path: str
    head: tuple[str, ...]
    entry: Callable[[str, str, bool], str]  # (key, value, is_last) -> line
    tail: tuple[str, ...] = ()
    words: tuple[str, ...] = WORDS
    comment: str = "Display names - keep the keys stable"


def _markdown(code: str, words: tuple[str, ...]) -> Language:
    return Language(
        f"markdown-{code}",
        f"docs/catalog.{code}.md",
        ("# @C@", "", "| key | name |", "| --- | --- |"),
        lambda k, v, last: f"| {k} | {v} |",
        ("", "@C@"),
        words,
        f"{words[0]} {words[1]}-{words[2]}",
    )


LANGUAGES = {
    lang.name: lang
    for lang in (
        Language(
            "python",
            "app/catalog.py",
            ('"""Catalog of display names."""', "", "# @C@", "CATALOG = {"),
            lambda k, v, last: f'    "{k}": "{v}",',
            ("}", "", "", "def lookup(key: str) -> str:", "    return CATALOG[key]"),
        ),
        Language(
            "typescript",
            "src/catalog.ts",
            ("// @C@", "export const catalog: Record<string, string> = {"),
            lambda k, v, last: f'  {k}: "{v}",',
            (
                "};",
                "",
                "export function lookup(key: string): string {",
                "  return catalog[key];",
                "}",
            ),
        ),
        Language(
            "go",
            "catalog/catalog.go",
            (
                "// Package catalog holds display names.",
                "package catalog",
                "",
                "// @C@",
                "var Catalog = map[string]string{",
            ),
            lambda k, v, last: f'\t"{k}":\t"{v}",',
            ("}",),
        ),
        Language(
            "rust",
            "src/catalog.rs",
            ("// @C@", "pub const CATALOG: &[(&str, &str)] = &["),
            lambda k, v, last: f'    ("{k}", "{v}"),',
            ("];",),
        ),
        Language(
            "java",
            "src/main/java/app/Catalog.java",
            (
                "package app;",
                "",
                "import java.util.Map;",
                "",
                "/** @C@ */",
                "public final class Catalog {",
                "    public static final Map<String, String> NAMES = Map.ofEntries(",
            ),
            lambda k, v, last: f'        Map.entry("{k}", "{v}")' + ("" if last else ","),
            ("    );", "}"),
        ),
        Language(
            "csharp",
            "src/Catalog.cs",
            (
                "namespace App;",
                "",
                "// @C@",
                "public static class Catalog",
                "{",
                "    public static readonly Dictionary<string, string> Names = new()",
                "    {",
            ),
            lambda k, v, last: f'        ["{k}"] = "{v}",',
            ("    };", "}"),
        ),
        Language(
            "sql",
            "db/seed.sql",
            ("-- @C@", "BEGIN;"),
            lambda k, v, last: f"INSERT INTO catalog (key, name) VALUES ('{k}', '{v}');",
            ("COMMIT;",),
        ),
        Language(
            "shell",
            "scripts/catalog.sh",
            ("#!/bin/sh", "# @C@", "set -eu", ""),
            lambda k, v, last: f'export {k.upper()}="{v}"',
        ),
        Language(
            "json",
            "data/catalog.json",
            ("{", '  "comment": "@C@",', '  "catalog": {'),
            lambda k, v, last: f'    "{k}": "{v}"' + ("" if last else ","),
            ("  }", "}"),
        ),
        Language(
            "yaml",
            "config/catalog.yaml",
            ("# @C@", "catalog:"),
            lambda k, v, last: f'  {k}: "{v}"',
        ),
        _markdown("en", WORDS),
        _markdown("ar", ("سلام", "كتاب", "مدينة", "شمس", "قمر", "بحر", "نور", "جبل")),
        _markdown("he", ("שלום", "ספר", "עיר", "שמש", "ירח", "ים", "אור", "הר")),
        _markdown("zh", ("苹果", "河流", "山峰", "月亮", "太阳", "城市", "书本", "光明")),
        _markdown("ja", ("さくら", "やま", "かわ", "つき", "ほし", "そら", "うみ", "はな")),
        _markdown("ru", ("река", "гора", "город", "солнце", "луна", "море", "свет", "книга")),  # noqa: RUF001
    )
}


@dataclass(frozen=True)
class Fixture:
    language: Language
    comment: str
    keys: list[str]
    values: list[str]

    def lines(self, extra: tuple[int, str] | None = None) -> list[str]:
        """The file's lines; extra = (after entry index, line) inserts one more line."""
        lang = self.language
        head = [line.replace("@C@", self.comment) for line in lang.head]
        tail = [line.replace("@C@", self.comment) for line in lang.tail]
        body = []
        for i, (key, value) in enumerate(zip(self.keys, self.values, strict=True)):
            body.append(lang.entry(key, value, i == len(self.keys) - 1))
            if extra is not None and extra[0] == i:
                body.append(extra[1])
        return [*head, *body, *tail]

    def text(self, values: list[str] | None = None) -> str:
        fixture = (
            self if values is None else Fixture(self.language, self.comment, self.keys, values)
        )
        return join_lines(fixture.lines())


def _fixture(ctx: Context, base: str, k: int, planted: set[int]) -> Fixture:
    """Entries whose planted indexes hold the target spelling of base; a few others
    hold decoy spellings; the rest hold unrelated values."""
    rng, twin, lang = ctx.rng, ctx.twin, LANGUAGES[ctx.case]
    target, decoys = twin.value(base, k), twin.decoys(base, k)
    values = []
    for i in range(ENTRIES):
        if i in planted:
            values.append(target)
        elif rng.below(4) == 0:
            values.append(rng.choice(decoys))
        else:
            values.append(twin.value(filler(rng, {base}, lang.words), rng.below(97)))
    keys = [f"item_{i:03d}" for i in range(ENTRIES)]
    return Fixture(lang, twin.value(lang.comment, rng.below(97)), keys, values)


def _replace(ctx: Context, occurrences: int) -> Edit:
    rng, twin, lang = ctx.rng, ctx.twin, LANGUAGES[ctx.case]
    base, new_base = distinct_phrases(rng, 2, lang.words)
    k = rng.below(97)
    old, new = twin.value(base, k), twin.value(new_base, k + 1)
    planted = set(rng.sample(range(ENTRIES), occurrences))
    fixture = _fixture(ctx, base, k, planted)
    before = fixture.text()
    count_or_fail(before, old, occurrences, ctx.spec.id)
    after = fixture.text([new if i in planted else v for i, v in enumerate(fixture.values)])
    what = "the only occurrence" if occurrences == 1 else f"all {occurrences} occurrences"
    return Edit(
        f"In the file {quote(lang.path)}, replace {what} of {quote(old)} with {quote(new)}.",
        {lang.path: before},
        {lang.path: after},
    )


def _insert(ctx: Context) -> Edit:
    rng, twin, lang = ctx.rng, ctx.twin, LANGUAGES[ctx.case]
    base = filler(rng, (), lang.words)
    fixture = _fixture(ctx, base, 0, set())
    at = rng.below(ENTRIES - 1)
    anchor = fixture.lines()[len(lang.head) + at]
    new_line = lang.entry(f"item_{at:03d}_new", twin.value(base, rng.below(97)), False)
    if fixture.lines().count(anchor) != 1:
        raise AssertionError(f"{ctx.spec.id}: anchor line {anchor!r} is not unique")
    return Edit(
        f"In the file {quote(lang.path)}, insert the line {quote(new_line)} immediately "
        f"after the line {quote(anchor)}.",
        {lang.path: fixture.text()},
        {lang.path: join_lines(fixture.lines((at, new_line)))},
    )


_CASES = tuple(LANGUAGES)
FAMILIES = (
    Family(
        "lang-replace-one",
        "Replace the one occurrence of a value in a source or data file of the given "
        "language, among entries with near-identical values.",
        ("s50",),
        lambda ctx: _replace(ctx, 1),
        cases=_CASES,
        language=None,
    ),
    Family(
        "lang-replace-all",
        f"Replace all {SHARED_VALUE_ENTRIES} occurrences of a value in a source or data file "
        "of the given language.",
        ("s50",),
        lambda ctx: _replace(ctx, SHARED_VALUE_ENTRIES),
        cases=_CASES,
        language=None,
    ),
    Family(
        "lang-insert",
        "Insert a new entry line right after a given entry line, in the language's syntax "
        "(a trailing comma where the language needs one).",
        ("s50",),
        _insert,
        cases=_CASES,
        language=None,
    ),
)
