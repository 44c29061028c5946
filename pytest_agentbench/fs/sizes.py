"""Byte sizes as people write and read them: 1 GiB, 512M, 64 KiB."""

from __future__ import annotations

import re

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(?:([kmgt])(?:ib)?)?\s*", re.IGNORECASE)


def parse_size(raw: str) -> int | None:
    """Bytes from 1073741824, 1G, 1GiB, 1.5 GiB or 512M (K, M, G, T are powers of 1024); None
    for anything else, zero included."""
    match = _SIZE.fullmatch(raw)
    if match is None:
        return None
    value = int(float(match.group(1)) * _UNITS[(match.group(2) or "").lower()])
    return value or None


def format_size(size: int) -> str:
    """A size for people: 512 bytes, 64 KiB, 1.5 MiB, 20.0 GiB (whole numbers stay whole)."""
    if size < 1024:
        return f"{size} bytes"
    units = ("KiB", "MiB", "GiB", "TiB")
    value, index = size / 1024, 0
    while value >= 1024 and index < len(units) - 1:
        value, index = value / 1024, index + 1
    shown = f"{value:.0f}" if value.is_integer() else f"{value:.1f}"
    return f"{shown} {units[index]}"
