"""Price arithmetic."""


def add_percent(amount: int, pct: int) -> int:
    """amount increased by pct percent."""
    raise NotImplementedError
