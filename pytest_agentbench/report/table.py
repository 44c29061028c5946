"""Plain-text tables for the terminal, drawn by tabulate: columns two spaces apart under a
dashed rule.

tabulate is imported here, when a table is drawn (the end of a run, a report or compare), never
by the plugin's import or a trial; docs/performance.md says what it costs.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], right: Collection[int] = ()
) -> list[str]:
    """Lines of the table; the columns whose indexes are in `right` are right-aligned.

    Cells are shown as given (str()): numbers are formatted by the caller, never re-read.
    """
    from tabulate import tabulate

    align = ["right" if index in right else "left" for index in range(len(headers))]
    text = tabulate(
        [[str(cell) for cell in row] for row in rows],
        headers=list(headers),
        tablefmt="simple",
        colalign=align,
        disable_numparse=True,
    )
    return [line.rstrip() for line in text.splitlines()]
