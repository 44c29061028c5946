"""--agentbench-detach: the same pytest command again, in the background, owning the run.

A long study should not die with the terminal that started it. The command re-executes itself
(same interpreter, arguments, working directory and environment, less the flag) in a session
of its own, with no terminal: its output goes to <run dir>/run.log, its events to
progress.jsonl as for any run. The detached run takes the directory's lock (lock.py) as soon
as its options, agent and sandbox have been checked; the starting command waits for that, so
a usage error is still printed where the user typed the command, then prints how to watch and
stop the run and exits.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_agentbench.run.lock import holder

DETACHED_ENV = "AGENTBENCH_DETACHED"
"""Set in the detached run's environment to the run id the starting command chose and printed;
never detaches again."""
DETACH_FLAG = "--agentbench-detach"
LOG_FILE = "run.log"
START_WAIT_S = 120.0  # a run whose checks take longer is reported as still starting


def detached_run_id() -> str | None:
    """In a detached run: the run id its starting command chose (None: not detached)."""
    return os.environ.get(DETACHED_ENV) or None


def _as_typed(directory: Path, cwd: Path) -> str:
    """The directory as a path to type where the command was typed."""
    return str(directory.relative_to(cwd)) if directory.is_relative_to(cwd) else str(directory)


def detach(config: pytest.Config, directory: Path, run_id: str) -> int:
    """Start the detached run writing DIRECTORY and wait until it holds the lock; the exit
    status of this command (the run's own when it ended first, as a usage error does)."""
    if (held := holder(directory)) is not None:
        from pytest_agentbench.run.lock import in_use

        raise pytest.UsageError(in_use(directory, held))
    made = not directory.exists()
    directory.mkdir(parents=True, exist_ok=True)
    args = [arg for arg in config.invocation_params.args if arg != DETACH_FLAG]
    log_path = directory / LOG_FILE
    with open(log_path, "ab") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "pytest", *args],
            cwd=config.invocation_params.dir,
            env={**os.environ, DETACHED_ENV: run_id},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # no SIGHUP, no Ctrl-C from the terminal left behind
        )
    deadline = time.monotonic() + START_WAIT_S
    while (held := holder(directory)) is None or held.get("pid") != child.pid:
        if child.poll() is not None:
            sys.stderr.write(log_path.read_text(encoding="utf-8", errors="replace"))
            if made and [p.name for p in directory.iterdir()] == [LOG_FILE]:
                shutil.rmtree(directory)  # printed: a run that never started leaves nothing
            sys.stderr.write("agentbench: the detached run ended before it started\n")
            return child.returncode
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    shown = shlex.quote(_as_typed(directory, Path(config.invocation_params.dir)))
    started = "started" if held is not None else "is still starting"
    print(
        f"agentbench: detached run {run_id} {started} (pid {child.pid}) in {directory}\n"
        f"  its output:  {log_path}\n"
        f"  watch it:    agentbench status {shown} --watch\n"
        f"  stop it:     agentbench stop {shown}  (the trials running finish and are kept)"
    )
    return 0
