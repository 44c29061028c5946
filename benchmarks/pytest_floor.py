"""The least any pytest plugin could do for the peer's trials: the floor of pytest itself.

Loaded with ``-p benchmarks.pytest_floor`` (this plugin's own ``-p no:agentbench``), it turns
a file named ``trials.floor`` into one item per (task, repeat) of the peer's tasks. When
collection ends every trial starts on a thread of a pool of ``--floor-jobs``: a copy of the
task's workspace, the agent run there, then the task's ``verify.py`` as rerun-bench runs it
(``tasks/rerun.py`` says how), then the copy removed. Each item waits for its trial and
appends one line to ``--floor-record`` in the shape ``peer.our_tally`` reads back.

No sandbox, no run directory, no report, no artifacts: what is left is pytest's own start,
collection, item protocol and end around the same agents and verifiers. The concurrency
benchmark runs it beside this plugin and the peer, so its figures say how much of the
distance to the peer any pytest plugin pays.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

TRIALS_FILE = "trials.floor"
TRIALS_KEY = pytest.StashKey[dict[str, "Future[int]"]]()
# What rerun-bench's workspace copies leave out (rerun_bench/workspace.py); the plugin is not
# imported here, so its own list (tasks/rerun.py) is not either.
CACHES = shutil.ignore_patterns(
    "__pycache__", ".pytest_cache", ".git", ".ruff_cache", ".mypy_cache", "node_modules", "*.py[co]"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pytest floor")
    group.addoption("--floor-tasks", help="the peer's tasks directory")
    group.addoption("--floor-agent", help="the agent executable, run with no arguments")
    group.addoption("--floor-repeats", type=int, default=1)
    group.addoption("--floor-jobs", type=int, default=1, help="trials at once")
    group.addoption("--floor-record", help="a JSON line per trial goes here")


def trial(task_dir: Path, agent: str) -> int:
    """One trial; the verifier's exit status."""
    work = tempfile.mkdtemp(prefix="floor-")
    try:
        shutil.copytree(task_dir / "workspace", work, ignore=CACHES, dirs_exist_ok=True)
        subprocess.run([agent], cwd=work, stdin=subprocess.DEVNULL, capture_output=True)
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
        env["RERUN_BENCH_TASK_DIR"] = str(task_dir)
        verifier = [sys.executable, str(task_dir / "verify.py")]
        done = subprocess.run(
            verifier, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True
        )
        return done.returncode
    finally:
        shutil.rmtree(work, ignore_errors=True)


class TrialItem(pytest.Item):
    def __init__(self, *, task_dir: Path, repeat: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.task_dir = task_dir
        self.repeat = repeat

    def runtest(self) -> None:
        status = self.config.stash[TRIALS_KEY][self.nodeid].result()
        row = {"task": self.task_dir.name, "repeat": self.repeat, "status": "scored"}
        row["first_exact"] = status == 0
        with open(self.config.getoption("floor_record"), "a", encoding="utf-8") as record:
            record.write(json.dumps(row) + "\n")

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name


class TrialsFile(pytest.File):
    def collect(self) -> Iterator[TrialItem]:
        tasks = Path(self.config.getoption("floor_tasks"))
        ids = sorted(path.name for path in tasks.iterdir() if (path / "verify.py").is_file())
        for repeat in range(self.config.getoption("floor_repeats")):
            for task in ids:
                yield TrialItem.from_parent(
                    self, name=f"{task}::r{repeat}", task_dir=tasks / task, repeat=repeat
                )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> TrialsFile | None:
    return TrialsFile.from_parent(parent, path=file_path) if file_path.name == TRIALS_FILE else None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Every trial starts now, at most --floor-jobs at a time, in the items' order."""
    config = session.config
    pool = ThreadPoolExecutor(config.getoption("floor_jobs"))
    config.add_cleanup(pool.shutdown)
    agent = config.getoption("floor_agent")
    config.stash[TRIALS_KEY] = {
        item.nodeid: pool.submit(trial, item.task_dir, agent)
        for item in session.items
        if isinstance(item, TrialItem)
    }
