"""Performance measurements of the harness against floors and peers (``python -m benchmarks``).

Every benchmark lives in its own module of this package and exposes
``BENCHMARK = Benchmark(name, title, run)``; the runner discovers them by that convention.
``run(ctx)`` returns a list of checks made with :func:`check`, each a figure with its floor,
ratio, target and verdict. Never part of the unit tests: pytest.ini collects tests/ only.
"""

from __future__ import annotations

from benchmarks.core import Benchmark, Context, Target, check, stats

__all__ = ["Benchmark", "Context", "Target", "check", "stats"]
