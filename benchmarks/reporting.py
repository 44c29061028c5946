"""Reporting: metrics, the JSON report and the terminal table for 100,000 synthetic
observations over 2,000 tasks, in a child process so its peak RSS is its own.

Target: under 2 s and under 500 MB peak. The floor, for scale, is serializing the
observations alone with json.dumps (compact, C encoder) in the same child.
"""

from __future__ import annotations

import json
import sys

from benchmarks.core import Benchmark, Context, Target, check
from benchmarks.procs import child_env, run_process

CHILD = r"""
import json, random, resource, sys, time
from pathlib import Path
import pytest_agentbench.plugin  # loaded first, as pytest loads it
from pytest_agentbench.scoring.document import build_report, write_report
from pytest_agentbench.report.terminal import render
from pytest_agentbench.settings import Settings

tasks, repeats, out = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
rng = random.Random(7)
declared = {f"task-{t:05d}": {"category": "edit", "tags": ["a"], "fixture_hash": f"{t:064x}"}
            for t in range(tasks)}
observations = []
for task in declared:
    for repeat in range(repeats):
        exact = rng.random() < 0.7
        observations.append({
            "task": task, "repeat": repeat, "status": "scored", "cause": None, "attempts": 1,
            "first_exact": exact, "final_exact": exact, "eof_normalized": exact,
            "rounds": [{"attempt": 0, "round": 0, "exit_code": 0, "timed_out": False,
                        "wall_s": round(rng.uniform(2, 30), 3), "exact": exact,
                        "eof_normalized": exact, "differing": [] if exact else ["main.py"],
                        "missing": [], "unexpected": [], "invalid": []}],
            "tokens": {"input": rng.randint(900, 5000), "cached_input": 100,
                       "output": rng.randint(80, 1500), "reasoning": 10},
            "cost_usd": round(rng.uniform(0.001, 0.05), 6), "wall_s": round(rng.uniform(2, 30), 3),
            "category": "edit", "tags": ["a"], "fixture_hash": declared[task]["fixture_hash"],
            "agent": {"name": "mock", "session_id": "s", "model_reported": "mock-1",
                      "turns": 3, "tool_calls": 4},
        })
settings = Settings(agent="mock", repeats=repeats, json_path=out)
import numpy  # imported by the plugin long before the report is built
before_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
start = time.perf_counter()
report = build_report(settings, {"name": "mock"}, declared, observations, "t0", "t1")
built = time.perf_counter()
write_report(report, out)
written = time.perf_counter()
lines = render(report)
seconds = time.perf_counter() - start
parts = {"build_report": built - start, "write_report": written - built,
         "render": start + seconds - written}
start = time.perf_counter()
json.dumps(observations)
floor = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "floor": floor, "before_mb": before_mb,
                  "bytes": out.stat().st_size, "lines": len(lines), "parts": parts}))
"""


def run(ctx: Context) -> list[dict]:
    tasks, repeats = 2_000, 50
    seconds, floor, peaks, before, parts = [], [], [], [], []
    for attempt in range(ctx.runs(3, 1)):
        out = ctx.scratch / f"report{attempt}.json"
        argv = [sys.executable, "-c", CHILD, str(tasks), str(repeats), str(out)]
        done = run_process(argv, cwd=ctx.scratch, env=child_env())
        if done.returncode != 0:
            raise RuntimeError(f"reporting child exited {done.returncode}:\n{done.output[-2000:]}")
        figures = json.loads(done.output.strip().splitlines()[-1])
        seconds.append(figures["seconds"])
        floor.append(figures["floor"])
        before.append(figures["before_mb"])
        parts.append({k: round(v, 3) for k, v in figures["parts"].items()})
        peaks.append(done.max_rss_mb)
    observations = tasks * repeats
    return [
        check(
            f"metrics + JSON + table, {observations} observations, {tasks} tasks",
            unit="s",
            value=seconds,
            floor=floor,
            floor_is="json.dumps of the observations alone (compact)",
            target=Target("value", "<", 2.0),
            parts_s=parts,
        ),
        check(
            "peak RSS of the reporting process",
            unit="MB",
            value=peaks,
            target=Target("value", "<", 500),
            note="whole child process, including the synthetic observations held in memory",
            rss_before_report_mb=before,
        ),
    ]


BENCHMARK = Benchmark("reporting", "metrics and JSON for 100,000 observations", run)
