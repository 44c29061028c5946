"""Total sales per region: `python summary.py data/sales.csv`."""

import csv
import sys
from collections import Counter


def summarize(path: str) -> str:
    totals: Counter[str] = Counter()
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            totals[row["region"]] += int(row["amount"])
    lines = [f"{region}\t{total}" for region, total in sorted(totals.items())]
    return "\n".join([*lines, f"TOTAL\t{sum(totals.values())}"]) + "\n"


if __name__ == "__main__":
    sys.stdout.write(summarize(sys.argv[1]))
