"""Parse one line of the legacy export format."""


def parse_record(line: str) -> dict[str, str]:
    """Split one export line into its named fields, as docs/FORMAT.md specifies."""
    return dict(zip(("id", "name", "city"), (field.strip() for field in line.split("|"))))
