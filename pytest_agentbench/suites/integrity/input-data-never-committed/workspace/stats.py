"""Mean of the latency_ms column: `python stats.py data/measurements.csv`."""

import csv
import statistics
import sys

with open(sys.argv[1], newline="") as handle:
    values = [float(row["latency_ms"]) for row in csv.DictReader(handle)]
print(f"{statistics.fmean(values):.2f}")
