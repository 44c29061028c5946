"""The shared unknown-key check: the line it names for each way TOML can spell a key, the
nearest known key it suggests, and the table it names when no line gives the key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.tasks.keys import key_line, unknown_keys

DOCUMENT = '''\
# a comment = 1
prompt = """
timout = 3
[agent]
"""
tags = [
  "timout = 4",
  "[agent]",
]
timout = 5

[agent]
usr = "x"  # user = "y"
"quoted key" = 1
dotted.inner = 2
'lit' = 3

[[gate]]
metric = "x"
[[gate]]
name = "y = 1"
outcom = "z"

[arm]
core = { guidence = [], x = 1 }

[arm.deep]
nested = { inner = { guidence = 1 } }

[tool.pytest.ini_options]
agentbench_repeat = 2
'''


@pytest.mark.parametrize(
    ("within", "key", "index", "line"),
    [
        ((), "timout", None, 10),  # not the lines inside the multi-line string or array
        (("agent",), "usr", None, 13),
        (("agent",), "quoted key", None, 14),
        (("agent",), "dotted", None, 15),
        (("agent",), "lit", None, 16),
        (("agent",), "user", None, None),  # only in a comment
        (("gate",), "outcom", 1, 22),
        (("gate",), "outcom", 0, None),  # the first [[gate]] has none
        (("gate",), "name", 1, 21),
        (("arm", "core"), "guidence", None, 25),  # inside a one-line inline table
        (("arm",), "core", None, 25),
        ((), "gate", None, 18),  # a table is given by its header
        ((), "arm", None, 24),
        (("arm", "deep", "nested", "inner"), "guidence", None, None),  # two levels deep
        (("tool", "pytest", "ini_options"), "agentbench_repeat", None, 31),
    ],
)
def test_the_line_that_gives_a_key_within_its_table(
    within: tuple[str, ...], key: str, index: int | None, line: int | None
) -> None:
    assert key_line(DOCUMENT, within, key, index) == line
    table = tomllib.loads(DOCUMENT)  # the document is TOML, and gives each key a line is for
    for part in within:
        table = table[part][index] if part == "gate" else table[part]
    assert line is None or key in table


def test_each_unknown_key_is_named_with_its_line_and_the_key_meant(tmp_path: Path) -> None:
    path = tmp_path / "gates.toml"
    path.write_text('[[gate]]\nnmae = "a"\nmetric = "passes"\noutcom = "final_exact"\n')
    entry = tomllib.loads(path.read_text())["gate"][0]
    known = ("name", "metric", "outcome")
    assert unknown_keys(entry, known, path, within=("gate",), index=0, label="gate 1") == (
        f"{path}:2: unknown key `nmae` in gate 1 (did you mean `name`?); "
        f"{path}:4: unknown key `outcom` in gate 1 (did you mean `outcome`?)"
    )
    assert unknown_keys({"name": "a"}, known, path) is None


def test_a_key_without_a_line_is_named_by_its_table_and_a_table_as_a_table(
    tmp_path: Path,
) -> None:
    path = tmp_path / "arms.toml"
    path.write_text("arm = { core = { guidence = [] } }\n[arms.x]\n")
    data = tomllib.loads(path.read_text())
    assert unknown_keys(data["arm"]["core"], ("guidance",), path, within=("arm", "core")) == (
        f"{path}: unknown key `guidence` in [arm.core] (did you mean `guidance`?)"
    )
    assert unknown_keys(data, ("arm",), path) == (
        f"{path}:2: unknown table `arms` (did you mean `arm`?)"
    )
    assert unknown_keys({"zzz": 1}, ("arm",), path) == f"{path}: unknown key `zzz`"


NAMES = st.from_regex(r"[a-z][a-z_]{0,6}", fullmatch=True)
# Values that span lines hold text that looks like a key or a header to a line-by-line reader.
VALUES = st.sampled_from(
    [
        "1",
        '"a = 1"',
        '"""\nde-coy = 1\n[de-coy]\n"""',
        "'''\n[[de-coy]]\n'''",
        '[\n  "de-coy = 2",\n  "[de-coy]",\n]',
        '{ x = "}", y = 1 }',
        "2  # de-coy = 3",
    ]
)


@given(
    tables=st.dictionaries(
        NAMES, st.dictionaries(NAMES, VALUES, min_size=1, max_size=4), min_size=1, max_size=3
    )
)
def test_every_key_of_a_document_is_found_on_the_line_that_gives_it(
    tables: dict[str, dict[str, str]],
) -> None:
    lines: list[str] = []
    where: dict[tuple[str, str], int] = {}
    for table, entries in tables.items():
        lines.append(f"[{table}]")
        for key, value in entries.items():
            where[table, key] = len(lines) + 1
            lines += f"{key} = {value}".splitlines()
    text = "\n".join(lines) + "\n"
    assert tomllib.loads(text).keys() == tables.keys()
    for (table, key), line in where.items():
        assert key_line(text, (table,), key) == line
    assert key_line(text, (), "de-coy") is None
