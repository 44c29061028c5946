"""ledgerfmt-acme 3.1.4 (vendored): plain-text tables."""


def render_table(header, rows):
    """Columns left-aligned to their widest cell, separated by two spaces."""
    table = [[str(cell) for cell in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table)
