def calc_total(prices):
    """Sum the prices."""
    return sum(prices)
