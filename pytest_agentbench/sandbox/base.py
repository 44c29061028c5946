"""The Sandbox protocol: where a trial's workspace lives and how the agent's processes run."""

from __future__ import annotations

import contextlib
import os
import selectors
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
from typing import Any

import pytest

from pytest_agentbench.fs import fdtree
from pytest_agentbench.fs.filework import remove_later
from pytest_agentbench.sandbox.ownership import owned_dir
from pytest_agentbench.tasks.model import Task

OUTPUT_TAIL = 64 * 1024
READ_SIZE = 65536
POLL_S = 0.1  # how often a process whose pipes stay open is checked for exit
DRAIN_GRACE_S = 5.0  # how long output left in the pipes after exit is still read


SANDBOX_START = "sandbox_start"
DOCKER_ENGINE = "docker_engine"


class InfrastructureError(Exception):
    """The machine, not the agent, ended the trial: cause is machine-readable (SANDBOX_START,
    DOCKER_ENGINE, or a wire failure of meter.records), and decides; the message is for people
    only."""

    def __init__(self, cause: str, message: str) -> None:
        super().__init__(f"{cause}: {message}")
        self.cause = cause


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
    root: Path  # host directory holding workspace/ (and home/ when it is not in memory)
    engine: str | None = None  # the Docker engine of a pool it is on

    def _lay_out(
        self,
        root: Path,
        inner_workspace: str,
        inner_home: str | None,
        home_parent: str | None = None,
    ) -> None:
        """Place workspace/ under root; the agent sees it at inner_workspace, and its private
        home at inner_home (None: at the host path, for sandboxes that do not remap paths).

        The home is made when first asked for (an adapter writing its config or prompt, or the
        sandbox starting a process): agents that run no process (mock, oracle) never need it,
        and on many disks a directory costs more than the rest of such a trial. It is made in
        home_parent, a memory-backed directory, when the provider chose one (memory_dir).
        """
        self.root = root
        self.workspace = root / "workspace"
        self.workspace.mkdir(exist_ok=True)
        self._home: Path | None = None
        self._home_parent = home_parent
        self.inner_workspace = inner_workspace
        self._inner_home = inner_home

    @property
    def home(self) -> Path:
        """Host path of the private home/config directory, made on first use."""
        return self.make_home()

    @property
    def inner_home(self) -> str:
        """The private home as the agent process sees it."""
        return self._inner_home if self._inner_home is not None else str(self.home)

    def make_home(self) -> Path:
        """Make the home if it is not there yet; a sandbox calls it before starting a process."""
        if self._home is None:
            if self._home_parent is not None:  # private (0700) and unguessable in a shared dir
                prefix = f"{self.root.name}-home-"
                parent = owned_dir(self._home_parent)
                self._home = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
            else:
                self._home = self.root / "home"
                self._home.mkdir(exist_ok=True)  # root is private: a home/ there is ours
        return self._home

    def disk_used(self) -> int:
        """Bytes the workspace and the private home (once made) take together: per entry the
        larger of its apparent size and its allocated blocks (a sparse file at its length)."""
        roots = [str(self.workspace)]
        if self._home is not None:
            roots.append(str(self._home))
        return fdtree.disk_usage(roots)

    def _remove_files_later(self) -> None:
        """Hand the trial's directories to the file helper (the processes are gone)."""
        remove_later(self.root)
        if self._home is not None and self._home_parent is not None:
            remove_later(self._home)

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


def hidden_roots() -> list[Path]:
    """What no exposed path may be or hold: the operator's home, the directory pytest was
    started in (tasks, run directories, the project), and where trials and homes are made."""
    roots = [Path.home(), Path.cwd(), Path(tempfile.gettempdir()), Path("/dev/shm")]
    return list(dict.fromkeys(root.resolve() for root in roots))


def within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def checked_exposures(paths: Sequence[Path], origin: str, hidden: Sequence[Path]) -> list[Path]:
    """paths made absolute and real; one that is missing, or is or holds a hidden path, is a
    usage error naming origin (the option or command that asked for it)."""
    checked = []
    for path in paths:
        real = Path(path).resolve()
        if not real.exists():
            raise pytest.UsageError(f"{origin}: {path} does not exist")
        for secret in hidden:
            if within(secret, real):
                relation = "is" if real == secret else "holds"
                raise pytest.UsageError(
                    f"{origin}: {path} {relation} {secret}, which agents must not see (the home, "
                    "the project, the directory pytest was started in, where runs and trials "
                    "are made); expose a narrower path"
                )
        checked.append(real)
    return list(dict.fromkeys(checked))


class SandboxProvider(ABC):
    """Makes a fresh sandbox per trial (per recovery chain)."""

    kind: str
    # Whether agent processes may create namespaces, as a CLI's own sandbox (codex) does.
    nested_sandbox: bool = True
    home_parent: str | None = None  # a memory-backed directory for agents' homes (memory_dir)
    root_parent: str | None = None  # where trial directories are made (None: the temp dir)
    exposed: tuple[Path, ...] = ()  # host paths agents see read-only at the same path
    masked: tuple[Path, ...] = ()  # task data hidden again wherever an exposure shows it
    protected: tuple[Path, ...] = ()  # the run's own places: the project, where runs go
    sources: tuple[Path, ...] = ()  # the task sources, which no program's install root holds

    def protect(self, protected: Sequence[Path], sources: Sequence[Path]) -> None:
        """Learn the run's own places, before anything is exposed."""
        self.protected = tuple(dict.fromkeys(Path(p).resolve() for p in protected))
        self.sources = tuple(dict.fromkeys(Path(p).resolve() for p in sources))

    def hidden(self) -> list[Path]:
        """What no exposure may be or hold: hidden_roots() and the run's protected places."""
        return list(dict.fromkeys((*hidden_roots(), *self.protected)))

    def program_hidden(self) -> list[Path]:
        """What a program's install root may not be or hold: hidden(), and the task sources
        too (a directory the user exposes may hold one, which is then masked)."""
        return [*self.hidden(), *self.sources]

    def expose(self, paths: Sequence[Path], origin: str) -> None:
        """Show paths read-only, at their own path, to every agent process; asked before the
        first trial. tmp shows the whole machine anyway; bwrap and docker bind them."""
        added = checked_exposures(paths, origin, self.hidden())
        for path in added:
            for data in self.masked:
                if within(path, data):
                    raise pytest.UsageError(
                        f"{origin}: {path} is task data ({data}), which agents must not see"
                    )
        self.exposed = tuple(dict.fromkeys((*self.exposed, *added)))

    def mask(self, paths: Sequence[Path]) -> None:
        """Task data (sources, the bundled suites) agents must not see even where an exposed
        directory holds it (a venv with this package installed)."""
        self.masked = tuple(dict.fromkeys((*self.masked, *(p.resolve() for p in paths))))

    def keep_homes_on_disk(self) -> None:
        """For agents whose homes may grow large or must stay visible to a sandbox of their
        own (the real CLIs). Asked before the first trial."""
        self.home_parent = None

    def keep_trials_in_memory(self) -> None:
        """For an agent that starts no process (mock, oracle): whole trial directories go where
        homes would, when that is memory. Asked before the first trial."""
        self.root_parent = self.home_parent

    @abstractmethod
    def create(self, task: Task, trial_id: str) -> Sandbox:
        """A fresh sandbox whose workspace holds only the task's input tree."""

    def run_directory(self, directory: Path) -> None:
        """Where the run writes, told before the first trial: a provider whose processes
        share state (a pool's placement) keeps it there."""
        return None

    def describe(self) -> dict[str, Any]:
        """Facts for the run header and the report's run section."""
        return {"kind": self.kind}

    def placement(self) -> dict[str, str]:
        """Where agents' homes and trial directories go, for describe()."""
        return {
            "agent_home": self.home_parent or "trial directory",
            "trial_directories": self.root_parent or "temp directory",
        }

    def warning(self) -> str | None:
        """A line for the run header when the sandbox does not isolate the agent."""
        return None

    def process_limits_off(self) -> str | None:
        """Why the pids and memory limits cannot be made for this run's trials (the run header
        says so), or None when they hold."""
        return None

    def program_path(self, program: str) -> str:
        """Where agent processes find a host-installed program (an agent CLI), asked once before
        the first trial. tmp and bwrap see the host's files (bwrap exposes the program's
        install dir by itself), so the program runs where it is."""
        return program


class TrialAborted(BaseException):
    """The run is stopping at once (a second Ctrl-C while trials run on threads of their own):
    no round or sandbox starts, and this ends the trial without an outcome. A BaseException,
    so that nothing takes it for the trial's own failure."""


class LiveRounds:
    """The rounds running now on any thread, each with how to kill it: a process group, or a
    container. Trials on threads of their own (--agentbench-concurrency) cannot be reached by
    a KeyboardInterrupt; stopping at once kills them here instead."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.kills: dict[int, Any] = {}
        self.aborted = False
        self.counter = 0

    @contextlib.contextmanager
    def running(self, kill: Any) -> Any:
        """While the block runs, kill() ends the round; refused once aborted."""
        with self.lock:
            if self.aborted:
                raise TrialAborted("stopping at once: no new round starts")
            self.counter += 1
            key = self.counter
            self.kills[key] = kill
        try:
            yield
        finally:
            with self.lock:
                self.kills.pop(key, None)

    def check(self) -> None:
        if self.aborted:
            raise TrialAborted("stopping at once: no new sandbox starts")

    def abort(self) -> None:
        """Kill every round running now, and refuse new ones from now on."""
        with self.lock:
            self.aborted = True
            kills = list(self.kills.values())
        for kill in kills:
            with contextlib.suppress(Exception):
                kill()


LIVE_ROUNDS = LiveRounds()


def start_sandbox(provider: SandboxProvider, task: Task, trial_id: str) -> Sandbox:
    """provider.create, where an OSError (no room for the trial's directory, no process left
    to start) is the machine's: an infrastructure failure (SANDBOX_START)."""
    LIVE_ROUNDS.check()
    try:
        return provider.create(task, trial_id)
    except OSError as error:
        raise InfrastructureError(SANDBOX_START, f"{provider.kind} sandbox: {error}") from None


def memory_dir(min_free: int = 0) -> str | None:
    """/dev/shm when it is a directory this process may write and run programs from, with at
    least min_free bytes free; None elsewhere (no such mount, mounted noexec, a container's
    small default)."""
    shm = "/dev/shm"
    try:
        stats = os.statvfs(shm)
    except OSError:
        return None
    usable = os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK)
    flags_ok = not stats.f_flag & (os.ST_NOEXEC | os.ST_RDONLY)
    return shm if usable and flags_ok and stats.f_bavail * stats.f_frsize >= min_free else None


def make_trial_root(trial_id: str, parent: str | None = None) -> Path:
    """A private directory for one trial in parent (default: the temp dir), holding workspace/
    and home/ side by side; inside this process's owner directory there, so that a later run
    removes it if this one is killed."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in trial_id)[:80]
    return Path(tempfile.mkdtemp(prefix=f"agentbench-{safe}-", dir=owned_dir(parent)))


class _TailBuffer:
    """Keeps only the last `limit` bytes of a stream, so chatty agents cost bounded memory."""

    def __init__(self, limit: int = OUTPUT_TAIL) -> None:
        self.limit = limit
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > 2 * self.limit:
            del self.data[: len(self.data) - self.limit]

    def value(self) -> bytes:
        return bytes(self.data[-self.limit :])


def kill_group(pgid: int) -> None:
    """SIGKILL a whole process group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _read_ready(
    selector: selectors.BaseSelector, tails: dict[int, _TailBuffer], wait: float
) -> None:
    """One round: read whatever the pipes hold within `wait` seconds; forget pipes at EOF."""
    if not selector.get_map():
        time.sleep(wait)
        return
    for key, _ in selector.select(wait):
        if key.fd not in tails:
            continue  # the process-exit descriptor: the caller checks the process
        chunk = os.read(key.fd, READ_SIZE)
        if chunk:
            tails[key.fd].add(chunk)
        else:
            selector.unregister(key.fd)


def _exit_descriptor(process: subprocess.Popen[bytes]) -> int | None:
    """A descriptor that turns readable when the process exits (Linux pidfd), if available."""
    try:
        return os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        return None


def _wait_reading(
    process: subprocess.Popen[bytes],
    selector: selectors.BaseSelector,
    tails: dict[int, _TailBuffer],
    deadline: float,
) -> bool:
    """Read the pipes until the process exits (True) or the deadline passes (False).

    One thread multiplexes both pipes and the exit, so a trial starts no reader threads and
    never sleeps-polls for a short process. Without pidfd the exit is polled every POLL_S.
    """
    exit_fd = _exit_descriptor(process)
    if exit_fd is not None:
        selector.register(exit_fd, selectors.EVENT_READ)
    try:
        while process.poll() is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            _read_ready(
                selector, tails, remaining if exit_fd is not None else min(remaining, POLL_S)
            )
        return True
    finally:
        if exit_fd is not None:
            selector.unregister(exit_fd)
            os.close(exit_fd)


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
    groups: list[int] = []

    def kill() -> None:
        for group in groups:
            kill_group(group)

    with LIVE_ROUNDS.running(kill):
        return _run_process_group(argv, env, cwd, timeout, on_timeout, groups)


def _run_process_group(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    timeout: float,
    on_timeout: Any,
    groups: list[int],
) -> ProcessResult:
    start = time.monotonic()
    try:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:  # no program to start the sandbox with, no process left to fork
        raise InfrastructureError(SANDBOX_START, f"cannot start {argv[0]}: {error}") from None
    groups.append(process.pid)
    if LIVE_ROUNDS.aborted:  # aborted while it started: LIVE_ROUNDS.abort did not see it
        kill_group(process.pid)
    assert process.stdout is not None and process.stderr is not None
    out, err = _TailBuffer(), _TailBuffer()
    tails = {process.stdout.fileno(): out, process.stderr.fileno(): err}
    timed_out = False
    with selectors.DefaultSelector() as selector:
        for fd in tails:
            selector.register(fd, selectors.EVENT_READ)
        try:
            timed_out = not _wait_reading(process, selector, tails, start + timeout)
            if timed_out:
                if on_timeout is not None:
                    on_timeout()
                kill_group(process.pid)
            process.wait()
        finally:
            if process.poll() is None:  # interrupted (Ctrl-C): take the group down with us
                kill_group(process.pid)
                process.wait()
        kill_group(process.pid)  # descendants that outlived the leader
        drain_deadline = time.monotonic() + DRAIN_GRACE_S
        while selector.get_map() and (left := drain_deadline - time.monotonic()) > 0:
            _read_ready(selector, tails, left)  # output still in the pipes after the exit
    process.stdout.close()
    process.stderr.close()
    return ProcessResult(
        exit_code=None if timed_out else process.returncode,
        timed_out=timed_out,
        wall_s=time.monotonic() - start,
        stdout=out.value(),
        stderr=err.value(),
    )
