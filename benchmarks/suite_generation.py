"""How fast the mechanical suite is generated and collected, and how much memory it takes.

    python benchmarks/suite_generation.py

Target: the full suite's items collected by pytest in well under 2 s; trees are built
per item, so peak memory is that of the largest task, not of the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _seconds(start: float) -> float:
    return round(time.perf_counter() - start, 4)


def measure_generation() -> dict[str, Any]:
    """specs(), tasks() and building every tree once, one task at a time."""
    from pytest_agentbench.suites import mechanical

    start = time.perf_counter()
    specs = mechanical.specs()
    specs_s = _seconds(start)
    start = time.perf_counter()
    mechanical.tasks()
    tasks_s = _seconds(start)

    tracemalloc.start()
    start = time.perf_counter()
    largest, largest_id, total_bytes = 0, "", 0
    for spec in specs:
        built = spec.build()
        size = sum(map(len, built.input_files.values())) + sum(
            map(len, built.expected_files.values())
        )
        total_bytes += size
        if size > largest:
            largest, largest_id = size, spec.id
        del built
    build_s = _seconds(start)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "tasks": len(specs),
        "specs_s": specs_s,
        "tasks_s": tasks_s,
        "build_all_s": build_s,
        "build_all_peak_mib": round(peak / 2**20, 1),
        "tree_bytes_total_mib": round(total_bytes / 2**20, 1),
        "largest_task": largest_id,
        "largest_task_mib": round(largest / 2**20, 2),
    }


def measure_collection(source: str) -> dict[str, Any]:
    """Wall time of `pytest --collect-only --tasks=SOURCE` in a fresh process."""
    argv = [
        sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
        "--agent=oracle", f"--tasks={source}",
    ]  # fmt: skip
    start = time.perf_counter()
    run = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = _seconds(start)
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-500:]
    return {"wall_s": wall, "pytest_says": summary}


def measure() -> dict[str, Any]:
    """Generation figures, and collection of the suite beside the 5 bundled directory
    tasks as a baseline (the difference is what the suite costs pytest)."""
    return {
        **measure_generation(),
        "collect_mechanical": measure_collection("builtin:mechanical"),
        "collect_baseline_directory_tasks": measure_collection("builtin:tasks"),
    }


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print(json.dumps(measure(), indent=2))
