"""Unknown keys in a user's TOML file, named with their line and the nearest valid key.

A misspelt key that loads with its default passes unnoticed (a gate that never fails, a
timeout that is never set), so every file a user writes refuses keys it does not know.
tomllib keeps no positions: the line is found by scanning the file's text for the key within
its table, skipping multi-line strings and values; a key it cannot place (one deep inside an
inline table, say) is named by its table instead.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def unknown_keys(
    table: Mapping[str, Any],
    known: Collection[str],
    path: Path,
    *,
    within: Sequence[str] = (),
    index: int | None = None,
    label: str | None = None,
) -> str | None:
    """None when every key of table is known; else one message per unknown key, each naming
    path:line (path alone when no line gives it), the key, its table and the nearest known key.

    within is the table's own key path (("arm", "core") for [arm.core]), index the 0-based
    place of an array-of-tables entry ([[gate]]), label how the message names the table
    (default "[a.b]", nothing at the top level).
    """
    unknown = [key for key in table if key not in known]
    if not unknown:
        return None
    text = _read(path)
    lines = {key: key_line(text, within, key, index) if text else None for key in unknown}
    unknown.sort(key=lambda key: (lines[key] is None, lines[key] or 0, key))
    if label is None:
        label = f"[{'.'.join(within)}]" if within else ""
    messages = []
    for key in unknown:
        line = lines[key]
        kind = "table" if _is_table(table[key]) else "key"
        where = f" in {label}" if label else ""
        message = f"{path}:{line}:" if line is not None else f"{path}:"
        message += f" unknown {kind} `{key}`{where}"
        messages.append(message + did_you_mean(key, known))
    return "; ".join(messages)


def did_you_mean(key: str, known: Collection[str]) -> str:
    """' (did you mean `nearest`?)' for the known key closest to key, or "" when none is."""
    near = difflib.get_close_matches(key, sorted(known), n=1)
    return f" (did you mean `{near[0]}`?)" if near else ""


def _is_table(value: Any) -> bool:
    """Whether a key holds a table (or an array of them): a misspelt table is called one."""
    if isinstance(value, list):
        return bool(value) and all(isinstance(item, dict) for item in value)
    return isinstance(value, dict)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def key_line(text: str, within: Sequence[str], key: str, index: int | None = None) -> int | None:
    """The 1-based line that gives key in the table at `within` (entry `index` of an array
    of tables), as a key, a dotted key, a table header or inside a one-line inline table;
    None when no line does."""
    target = (*within, key)
    for number, header, entry, path, value in _lines(text):
        if index is not None and (header[: len(within)] != tuple(within) or entry != index):
            continue
        if path[: len(target)] == target:
            return number
        if path == tuple(within) and _inline_key(value, key):
            return number
    return None


def _lines(text: str) -> Iterator[tuple[int, tuple[str, ...], int | None, tuple[str, ...], str]]:
    """(line number, current header, its array-of-tables entry, key path, value text) for
    every header and key line outside multi-line strings and values."""
    header: tuple[str, ...] = ()
    entry: int | None = None
    entries: dict[tuple[str, ...], int] = {}
    closing: str | None = None  # the delimiter of an open multi-line string
    depth = 0  # brackets open in a multi-line array or inline table
    for number, line in enumerate(text.splitlines(), start=1):
        if closing is not None or depth:
            closing, depth = _scan(line, closing, depth)
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("["):
            double = stripped.startswith("[[")
            name = stripped[2:] if double else stripped[1:]
            keys = _keys(name.split("]", 1)[0])
            if keys is None:
                continue
            header, entry = keys, None
            if double:
                entry = entries[keys] = entries.get(keys, -1) + 1
            yield number, header, entry, header, ""
            continue
        name, equals, value = _split_key(stripped)
        keys = _keys(name) if equals else None
        if keys is None:
            continue
        closing, depth = _scan(value, None, 0)
        yield number, header, entry, (*header, *keys), value


def _split_key(line: str) -> tuple[str, str, str]:
    """line split at its first `=` outside quotes: (key, "=", value), or (line, "", "")."""
    quote = None
    for position, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "=":
            return line[:position], "=", line[position + 1 :]
    return line, "", ""


def _keys(text: str) -> tuple[str, ...] | None:
    """The parts of a dotted key (bare or quoted), or None when text is not a key."""
    parts = []
    rest = text.strip()
    while rest:
        if rest[0] in "\"'":
            end = rest.find(rest[0], 1)
            if end < 0:
                return None
            parts.append(rest[1:end])
            rest = rest[end + 1 :].strip()
        else:
            match = _BARE.match(rest)
            if match is None:
                return None
            parts.append(match.group())
            rest = rest[match.end() :].strip()
        if rest.startswith("."):
            rest = rest[1:].strip()
        elif rest:
            return None
    return tuple(parts) or None


def _scan(text: str, closing: str | None, depth: int) -> tuple[str | None, int]:
    """After text: the multi-line string still open (its delimiter) and the bracket depth."""
    position = 0
    while position < len(text):
        if closing is not None:
            end = text.find(closing, position)
            if end < 0:
                return closing, depth
            position, closing = end + 3, None
            continue
        char = text[position]
        if text.startswith(('"""', "'''"), position):
            closing, position = text[position : position + 3], position + 3
        elif char in "\"'":
            end = position + 1
            while end < len(text) and text[end] != char:
                end += 2 if char == '"' and text[end] == "\\" else 1
            position = end + 1
        elif char == "#":
            break
        else:
            depth += (char in "[{") - (char in "]}")
            position += 1
    return closing, max(depth, 0)


def _inline_key(value: str, key: str) -> bool:
    """Whether a one-line inline table (or array of them) gives key."""
    name = re.escape(key)
    pattern = rf"[{{,]\s*(?:{name}|\"{name}\"|'{name}')\s*[.=]"
    return "{" in value and re.search(pattern, value) is not None
