def last_n(items, n):
    """Return the last n items of items."""
    if n <= 0:
        return []
    return items[len(items) - n + 1 :]
