"""What placing a trial on a pool of engines costs, and that no engine ever holds more trials
than its slots.

Subject: a trial's whole placement, its slot taken (every look for a free one, as
Placement.acquire looks) and given back through engines.json (sandbox/placement.py), while
two processes of eight threads each (as `-n 2` with `--agentbench-concurrency 8`) place trials
that each hold their slot 5 ms, on three engines of 2, 3 and 4 slots. A watcher reads the file
throughout and keeps, per engine, the most trials it ever saw held.
"""

from __future__ import annotations

import json
import multiprocessing
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.core import Benchmark, Context, Target, check
from pytest_agentbench.sandbox.placement import PLACEMENT_FILE, WAIT_S, Placement

SLOTS = {"unix:///var/run/docker.sock": 2, "tcp://build-7:2376": 3, "ssh://runner@build-8": 4}
THREADS = 8
HOLD_S = 0.005


def _worker(directory: str, trials: int, out: Any) -> None:
    placement = Placement("bench", SLOTS)
    placement.share_in(Path(directory))
    costs: list[float] = []
    lock = threading.Lock()
    counter = iter(range(trials))

    def place() -> None:
        while True:
            with lock:
                index = next(counter, None)
            if index is None:
                return
            key = f"{multiprocessing.current_process().name}-{index}"
            took = 0.0  # every look for a slot counts; the waits between them (WAIT_S) do not
            while True:
                started = time.perf_counter()
                name = placement.try_acquire(key)
                took += time.perf_counter() - started
                if name is not None:
                    break
                time.sleep(WAIT_S)
            time.sleep(HOLD_S)
            released = time.perf_counter()
            placement.release(key)
            with lock:
                costs.append((took + time.perf_counter() - released) * 1000)

    threads = [threading.Thread(target=place) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.put(costs)


def _watch(path: Path, stop: threading.Event, peak: dict[str, int]) -> None:
    while not stop.is_set():
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for name in SLOTS:
            held = sum(h["engine"] == name for h in state["held"].values())
            peak[name] = max(peak.get(name, 0), held)


def run(ctx: Context) -> list[dict[str, Any]]:
    trials = ctx.runs(400, 60)
    with tempfile.TemporaryDirectory(dir=ctx.scratch) as directory:
        context = multiprocessing.get_context("spawn")
        out = context.Queue()
        peak: dict[str, int] = {}
        stop = threading.Event()
        watcher = threading.Thread(
            target=_watch, args=(Path(directory) / PLACEMENT_FILE, stop, peak)
        )
        watcher.start()
        workers = [context.Process(target=_worker, args=(directory, trials, out)) for _ in "ab"]
        for worker in workers:
            worker.start()
        costs = [cost for _ in workers for cost in out.get(timeout=600)]
        for worker in workers:
            worker.join(60)
        stop.set()
        watcher.join(10)
    over = [float(max(peak.get(name, 0) - slots, 0)) for name, slots in SLOTS.items()]
    return [
        check(
            "placement: a trial's slot taken and given back",
            unit="ms",
            value=costs,
            target=Target("value", "<=", 20.0),
            note=f"{len(costs)} trials, 2 processes x {THREADS} threads, 3 engines",
        ),
        check(
            "placement: trials held past an engine's slots",
            unit="trials",
            value=over,
            target=Target("value", "<=", 0.0),
            note=f"peak held per engine {peak} of slots {SLOTS}",
        ),
    ]


BENCHMARK = Benchmark("placement", "Placing trials on a pool of engines", run)
