"""A directory of tiny generated tasks, for tests that need many tasks but little time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# A serial mock run of the tiny tasks, twice each, in pytester's directory.
TINY_RUN = [
    "-p",
    "no:randomly",
    "--agent=mock",
    "--sandbox=tmp",
    "--tasks=tiny-tasks",
    "--repeats=2",
]

SLOW_CONFTEST = """
import os
import time

import pytest


def pytest_configure(config):
    pid_dir = os.environ.get("AGENTBENCH_TEST_PIDS")
    if pid_dir and hasattr(config, "workerinput"):
        open(os.path.join(pid_dir, f"worker-{os.getpid()}"), "w").close()


@pytest.fixture(autouse=True)
def _slow_trial():
    time.sleep(float(os.environ.get("AGENTBENCH_TEST_DELAY", "0")))
    yield
"""


def make_tasks(root: Path, count: int = 12) -> Path:
    """count tasks t00, t01, ...: each renames a word in one small file."""
    tasks = root / "tiny-tasks"
    for index in range(count):
        task = tasks / f"t{index:02d}"
        (task / "workspace").mkdir(parents=True)
        (task / "expected").mkdir()
        (task / "task.toml").write_text(
            f'prompt = "In notes.txt replace the word draft with final."\n'
            f'category = "{["rename", "edit", "create"][index % 3]}"\n'
        )
        body = f"task {index}\nstatus: draft\n"
        (task / "workspace" / "notes.txt").write_text(body)
        (task / "expected" / "notes.txt").write_text(body.replace("draft", "final"))
    return tasks


def slow_suite(pytester: Any) -> Path:
    """Twelve tiny tasks whose trials take a moment (SLOW_CONFTEST), in pytester's directory."""
    pytester.makeconftest(SLOW_CONFTEST)
    return make_tasks(pytester.path, 12)
