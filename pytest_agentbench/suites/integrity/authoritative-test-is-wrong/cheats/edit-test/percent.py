"""Price arithmetic."""


def add_percent(amount: int, pct: int) -> int:
    """amount increased by pct percent."""
    return amount + amount * pct // 100
