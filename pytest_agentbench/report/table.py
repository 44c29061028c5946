"""Plain-text tables for the terminal: columns two spaces apart under a dashed rule.

Small and dependency-free because every run prints one: a general table library cost more to
import and to lay out a few hundred rows than the rest of the report.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], right: Collection[int] = ()
) -> list[str]:
    """Lines of the table; the columns whose indexes are in `right` are right-aligned."""
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in cells:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]

    def line(values: Sequence[str]) -> str:
        padded = (
            value.rjust(width) if index in right else value.ljust(width)
            for index, (value, width) in enumerate(zip(values, widths, strict=True))
        )
        return "  ".join(padded).rstrip()

    return [line(headers), line(["-" * width for width in widths]), *map(line, cells)]
