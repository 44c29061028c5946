"""Print the quarterly ledger as a table."""

from ledgerfmt_acme import render_table

ROWS = [("Q1", 120), ("Q2", 95), ("Q3", 143)]

if __name__ == "__main__":
    print(render_table(["quarter", "total"], ROWS))
