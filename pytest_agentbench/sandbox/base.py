"""The Sandbox protocol: where a trial's workspace lives and how the agent's processes run."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from pytest_agentbench.tasks.model import Task

OUTPUT_TAIL = 64 * 1024


@dataclass
class ProcessResult:
    """How one agent process ended. exit_code is None when it was killed at the deadline."""

    exit_code: int | None
    timed_out: bool
    wall_s: float
    stdout: bytes
    stderr: bytes


class Sandbox(ABC):
    """One trial's workspace and the boundary its agent processes run inside."""

    kind: str
    workspace: Path  # host path the grader reads
    inner_workspace: str  # the same directory as the agent process sees it
    home: Path  # host path of the private home/config directory
    inner_home: str

    @abstractmethod
    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        timeout: float,
        cwd: str | None = None,
    ) -> ProcessResult:
        """Run argv inside the sandbox with stdin closed; kill its whole group at the deadline."""

    @abstractmethod
    def close(self) -> None:
        """Stop every process and remove what the sandbox created."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class SandboxProvider(ABC):
    """Makes a fresh sandbox per trial (per recovery chain)."""

    kind: str

    @abstractmethod
    def create(self, task: Task, trial_id: str) -> Sandbox:
        """A fresh sandbox whose workspace holds only the task's input tree."""

    def describe(self) -> dict[str, Any]:
        """Facts for the run header and the report's run section."""
        return {"kind": self.kind}

    def warning(self) -> str | None:
        """A line for the run header when the sandbox does not isolate the agent."""
        return None


def make_trial_root(trial_id: str) -> Path:
    """A private temp directory for one trial, holding workspace/ and home/ side by side."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in trial_id)[:80]
    return Path(tempfile.mkdtemp(prefix=f"agentbench-{safe}-"))


class _TailBuffer:
    """Keeps only the last `limit` bytes of a stream, so chatty agents cost bounded memory."""

    def __init__(self, limit: int = OUTPUT_TAIL) -> None:
        self.limit = limit
        self.data = bytearray()

    def drain(self, stream: IO[bytes]) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
            self.data += chunk
            if len(self.data) > 2 * self.limit:
                del self.data[: len(self.data) - self.limit]

    def value(self) -> bytes:
        return bytes(self.data[-self.limit :])


def kill_group(pgid: int) -> None:
    """SIGKILL a whole process group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_process_group(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    timeout: float,
    on_timeout: Any = None,
) -> ProcessResult:
    """Run argv in a new session (its own process group), stdin closed, bounded output tails.

    At the deadline the whole group is killed, and so is any descendant left in the group
    after a normal exit, so nothing the agent started outlives its trial.
    """
    start = time.monotonic()
    process = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    out, err = _TailBuffer(), _TailBuffer()
    readers = [
        threading.Thread(target=out.drain, args=(process.stdout,), daemon=True),
        threading.Thread(target=err.drain, args=(process.stderr,), daemon=True),
    ]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        if on_timeout is not None:
            on_timeout()
        kill_group(process.pid)
        process.wait()
    finally:
        if process.poll() is None:  # interrupted (Ctrl-C): take the group down with us
            kill_group(process.pid)
            process.wait()
    kill_group(process.pid)  # descendants that outlived the leader
    for reader in readers:
        reader.join(timeout=5)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()
    return ProcessResult(
        exit_code=None if timed_out else process.returncode,
        timed_out=timed_out,
        wall_s=time.monotonic() - start,
        stdout=out.value(),
        stderr=err.value(),
    )
