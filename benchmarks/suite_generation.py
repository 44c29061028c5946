"""The bundled mechanical suite: generating it, its memory, and collecting the default selection.

Generation runs in a fresh child per sample (imports included): ``specs()``, ``tasks()`` and
every task's trees built once, one task at a time. Then, traced, the same again against
building the largest task alone: trees are built per task and dropped, so the peak must stay
near that of the largest task, however many tasks the suite has.
Collection: ``--collect-only`` of the whole default selection (the bundled directory tasks
and every bundled suite, one repeat) against one plain parametrized test function with the
same number of items; whole-process wall, start-up in both.

    python -m benchmarks.suite_generation      # this benchmark alone, through the runner
"""

from __future__ import annotations

import json
import sys
from typing import Any

from benchmarks.collection import collection_check
from benchmarks.core import Benchmark, Context, Target, check
from benchmarks.procs import child_env, run_process

GENERATE = """
import json, time, tracemalloc
start = time.perf_counter()
from pytest_agentbench.suites import mechanical
specs = mechanical.specs()
mechanical.tasks()
listed = time.perf_counter() - start
sizes = {}
for spec in specs:
    built = spec.build()
    sizes[spec.id] = sum(map(len, built.input_files.values())) + sum(
        map(len, built.expected_files.values())
    )
    del built
total_s = time.perf_counter() - start


def traced_peak(chosen):
    tracemalloc.start()
    for spec in chosen:
        built = spec.build()
        del built
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


largest = max(specs, key=lambda spec: sizes[spec.id])
print(json.dumps({
    "tasks": len(specs), "listed_s": listed, "total_s": total_s,
    "peak_all_bytes": traced_peak(specs), "peak_largest_bytes": traced_peak([largest]),
    "largest_task": largest.id, "all_trees_bytes": sum(sizes.values()),
}))
"""


def _generate(ctx: Context) -> dict[str, Any]:
    done = run_process([sys.executable, "-c", GENERATE], cwd=ctx.scratch, env=child_env())
    if done.returncode != 0:
        raise RuntimeError(f"generating the mechanical suite failed:\n{done.output[-2000:]}")
    figures: dict[str, Any] = json.loads(done.output.strip().splitlines()[-1])
    return figures


def run(ctx: Context) -> list[dict[str, Any]]:
    generated = [_generate(ctx) for _ in range(ctx.runs(3, 1))]
    last = generated[-1]
    mib = 2**20
    return [
        check(
            f"mechanical suite, {last['tasks']} tasks: import, list and build every tree",
            unit="s",
            value=[g["total_s"] for g in generated],
            target=Target("value", "<", 2.0),
            note=f"listing alone (import, specs(), tasks()): "
            f"{min(g['listed_s'] for g in generated):.3f} s at best; "
            f"all trees together {last['all_trees_bytes'] / mib:.1f} MiB",
            tasks=last["tasks"],
        ),
        check(
            "traced peak building every tree, vs building the largest task alone",
            unit="MiB",
            value=[g["peak_all_bytes"] / mib for g in generated],
            floor=[g["peak_largest_bytes"] / mib for g in generated],
            floor_is=f"tracemalloc peak of building {last['largest_task']} alone",
            target=Target("ratio", "<=", 1.5),
            note="trees are built per task and dropped: the suite is never in memory at once",
        ),
        collection_check(
            ctx,
            1,
            "--collect-only, default selection",
            "bundled directory tasks and every bundled suite, one repeat",
        ),
    ]


BENCHMARK = Benchmark(
    "suite_generation", "building the mechanical suite; collecting the default selection", run
)

if __name__ == "__main__":
    from benchmarks.__main__ import main

    sys.exit(main(["--only", BENCHMARK.name, *sys.argv[1:]]))
