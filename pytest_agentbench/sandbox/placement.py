"""Which engine of the pool each trial runs on, shared by every process of a run.

The state is one small JSON file, engines.json in the run directory, read and rewritten under
an exclusive flock(2) for each placement and release: the xdist workers of a run share it
without a service, and the kernel lets go of a lock whatever ends its holder. It holds, per
engine, its slots, whether it is down (and why), the trials placed there and their engine
failures; and the trials holding a slot now, each with its owning process, so a slot a killed
worker held is freed. A file of another run (a resumed directory) starts afresh.

A trial goes to the least-loaded engine with a free slot (the smallest share of its slots in
use; the first listed on a tie); with none free it waits; with every engine down it cannot run.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_agentbench.sandbox.base import DOCKER_ENGINE, LIVE_ROUNDS, InfrastructureError
from pytest_agentbench.sandbox.ownership import owner_is_dead, owner_token

PLACEMENT_FILE = "engines.json"
WAIT_S = 0.05  # between looks for a free slot


def choose(
    engines: Mapping[str, Mapping[str, Any]], held: Mapping[str, Mapping[str, Any]]
) -> str | None:
    """The engine the next trial goes to (least loaded by share of slots, the first listed on
    a tie), or None when no engine that is up has a free slot."""
    load = dict.fromkeys(engines, 0)
    for hold in held.values():
        if hold["engine"] in load:
            load[hold["engine"]] += 1
    free = [
        (load[name] / state["slots"], index, name)
        for index, (name, state) in enumerate(engines.items())
        if not state.get("down") and load[name] < state["slots"]
    ]
    return min(free)[2] if free else None


def read_placement(directory: Path) -> dict[str, Any] | None:
    """A run directory's placement state (for `agentbench status` and the report), or None."""
    try:
        with open(directory / PLACEMENT_FILE, encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_SH)
            found = json.loads(handle.read() or "null")
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


class Placement:
    """This process's view of the shared placement file (path; a private one until the run
    directory is known), over the engines it registered with their slots."""

    def __init__(self, run_id: str, engines: Mapping[str, int]) -> None:
        self.run_id = run_id
        self.engines = dict(engines)
        self.owner = owner_token()
        self.lock = threading.Lock()  # flock excludes processes; threads share one first
        handle, name = tempfile.mkstemp(prefix="agentbench-placement-", suffix=".json")
        os.close(handle)
        self.path = Path(name)
        self._private: Path | None = self.path
        atexit.register(self.path.unlink, missing_ok=True)  # a run that never shared it

    def share_in(self, directory: Path) -> None:
        """Place through the run directory's file from now on (asked before the first trial)."""
        directory.mkdir(parents=True, exist_ok=True)
        if self._private is not None:
            self._private.unlink(missing_ok=True)
            self._private = None
        self.path = directory / PLACEMENT_FILE

    @contextlib.contextmanager
    def _state(self) -> Iterator[dict[str, Any]]:
        """The state, locked; what the block leaves in it is written back."""
        with self.lock, open(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644), "r+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                state = json.loads(handle.read() or "null")
            except ValueError:
                state = None
            if not isinstance(state, dict) or state.get("run") != self.run_id:
                state = {"run": self.run_id, "engines": {}, "held": {}}
            for name, slots in self.engines.items():
                state["engines"].setdefault(
                    name, {"slots": slots, "down": None, "trials": 0, "failures": 0}
                )
            yield state
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(state, indent=1))

    def try_acquire(self, trial: str) -> str | None:
        """Hold a slot for trial on the engine choose() picks; None: no slot free now. Every
        engine down is an infrastructure failure."""
        with self._state() as state:
            engines, held = state["engines"], state["held"]
            if all(engines[name].get("down") for name in self.engines):
                downs = "; ".join(f"{n}: {engines[n]['down']}" for n in self.engines)
                raise InfrastructureError(
                    DOCKER_ENGINE, f"every engine of the pool is down ({downs})"
                )
            name = choose({n: engines[n] for n in self.engines}, held)
            if name is None:  # a worker killed outright cannot free its slots: free them here
                for key in [k for k, h in held.items() if owner_is_dead(h["owner"])]:
                    del held[key]
                name = choose({n: engines[n] for n in self.engines}, held)
            if name is not None:
                held[trial] = {"engine": name, "owner": self.owner}
                engines[name]["trials"] += 1
            return name

    def acquire(self, trial: str) -> str:
        """The engine trial runs on, waiting for a free slot (a stopping run stops waiting)."""
        while True:
            LIVE_ROUNDS.check()
            name = self.try_acquire(trial)
            if name is not None:
                return name
            time.sleep(WAIT_S)

    def release(self, trial: str) -> None:
        with self._state() as state:
            state["held"].pop(trial, None)

    def failed(self, name: str, down: str | None) -> None:
        """An engine failure of a trial on name; down: why the engine is down for the rest of
        the run (it no longer answers), None when it still does."""
        with self._state() as state:
            engine = state["engines"][name]
            engine["failures"] += 1
            if down and not engine["down"]:
                engine["down"] = down

    def is_down(self, name: str) -> bool:
        with self._state() as state:
            return bool(state["engines"][name]["down"])

    def snapshot(self) -> dict[str, Any]:
        with self._state() as state:
            return json.loads(json.dumps(state))


def pool_engines(state: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """The engines of a placement state, each with its slots, trials, engine failures, the
    trials on it now and why it is down (None: not a pool's run)."""
    if not state:
        return None
    held = list((state.get("held") or {}).values())
    return [
        {
            "name": name,
            **engine,
            "running": sum(1 for hold in held if hold.get("engine") == name),
        }
        for name, engine in (state.get("engines") or {}).items()
    ]
