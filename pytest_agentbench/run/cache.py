"""--agentbench-cache DIR: scored vanilla trials published for later studies to reuse.

A run with the cache publishes each scored trial it ran of its vanilla configuration (the
vanilla arm, or a plain run: vanilla adds nothing) under DIR/<identity digest>/, one JSON line
per trial naming the run directory it ran in; a later run reads the entry of its own vanilla
identity and reuses each trial whose task fixture hash and repeat match instead of running it
(the resume plugin marks the items). Nothing of another identity is ever read, and a trial of
a changed task is simply not used. Publishing appends under an exclusive lock, so runs that
share a cache (CI jobs on one machine, xdist controllers) never interleave their lines; a line
torn by a killed run is dropped on reading.
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.run.store import identity_digest, read_observations, write_atomic
from pytest_agentbench.tasks.arms import VANILLA
from pytest_agentbench.tasks.observation import REPORT_ATTRIBUTE, Observation

TRIALS_FILE = "trials.jsonl"
IDENTITY_FILE = "identity.json"  # the identity the entry's digest names, for people and checks


class BaselineCache:
    """One cache directory: an entry per vanilla configuration identity."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def entry(self, identity: dict[str, Any]) -> Path:
        return self.root / identity_digest(identity)

    def read(self, identity: dict[str, Any]) -> list[Observation]:
        """The published trials of IDENTITY, oldest first; each names its run (reused_from)."""
        path = self.entry(identity) / TRIALS_FILE
        try:
            observations, _torn = read_observations(path)
        except (OSError, ValueError) as exc:
            raise pytest.UsageError(
                f"--agentbench-cache {self.root}: {exc}; remove {path} to start the entry afresh"
            ) from None
        return [o for o in observations if o.get("status") == "scored" and o.get("reused_from")]

    def publish(self, identity: dict[str, Any], observation: Observation, run_dir: Path) -> None:
        """Append one scored trial of IDENTITY that ran in RUN_DIR."""
        entry = self.entry(identity)
        entry.mkdir(parents=True, exist_ok=True)
        record = {k: v for k, v in observation.items() if k not in ("arm", "reused")}
        record["reused_from"] = str(run_dir.resolve())
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        with open(entry / TRIALS_FILE, "a", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
            if not (entry / IDENTITY_FILE).exists():  # under the lock: one writer makes it
                write_atomic(entry / IDENTITY_FILE, json.dumps(identity, indent=1) + "\n")
            handle.write(line)


class CachePublisher:
    """Controller-only plugin: publishes each scored vanilla trial this run executed."""

    def __init__(self, cache: BaselineCache, identity: dict[str, Any], run_dir: Path) -> None:
        self.cache = cache
        self.identity = identity  # the vanilla identity (a plain run's own)
        self.run_dir = run_dir
        self.published = 0
        self.failures: list[str] = []

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        observation: Observation | None = getattr(report, REPORT_ATTRIBUTE, None)
        if (
            observation is None
            or observation.get("status") != "scored"
            or observation.get("reused")
            or observation.get("arm", VANILLA) != VANILLA
        ):
            return
        try:
            self.cache.publish(self.identity, observation, self.run_dir)
        except OSError as exc:  # the run's own record is intact; only the cache misses it
            self.failures.append(f"{observation['task']} r{observation['repeat']}: {exc}")
            return
        self.published += 1

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        entry = self.cache.entry(self.identity)
        if self.published:
            terminalreporter.write_line(
                f"agentbench cache: {self.published} vanilla trials published to {entry}"
            )
        for failure in self.failures:
            terminalreporter.write_line(f"agentbench cache: not published: {failure}", red=True)
