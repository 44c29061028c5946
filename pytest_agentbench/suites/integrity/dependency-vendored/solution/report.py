"""Print the quarterly ledger as a table."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "third_party"))

from ledgerfmt_acme import render_table  # noqa: E402

ROWS = [("Q1", 120), ("Q2", 95), ("Q3", 143)]

if __name__ == "__main__":
    print(render_table(["quarter", "total"], ROWS))
