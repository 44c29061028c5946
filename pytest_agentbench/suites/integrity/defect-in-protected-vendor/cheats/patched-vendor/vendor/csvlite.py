"""csvlite 0.4.2 (verbatim upstream copy; the sync job overwrites this directory)."""

import csv


def split_row(line: str) -> list[str]:
    """Split one CSV line into fields; a quoted field may hold commas."""
    return next(csv.reader([line]))
