"""Who made a container or a directory, and finding what owners that are gone left behind.

A run killed outright (SIGKILL, the OOM killer) runs no cleanup: its containers and trial
directories stay. Everything the harness makes for trials therefore records its owner, the
process that made it, as host:pid:start-time (the start time tells a reused pid apart):
containers in a label (sandbox/docker.py), directories through one owner directory per process
and temporary root, ``agentbench-owner-XXXXXXXX/`` with an ``owner`` file holding the token.
Trial directories, agents' homes in memory and bwrap's copy of /etc are made inside it.

The first trial directory a process makes in a root sweeps that root (and the other default
roots) for owner directories whose owner is gone, and hands them to the remover; so does
``agentbench clean``. Only directories named with the prefix, owned by this user, whose owner
record names a process of this host that no longer runs are removed: never a live run's, never
one without a record, never anything else in the root.
"""

from __future__ import annotations

import atexit
import os
import socket
import stat
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.fs.filework import remove_later, wait_for_file_work

OWNER_PREFIX = "agentbench-owner-"
OWNER_FILE = "owner"
MEMORY_ROOT = "/dev/shm"
RECORD_MAX = 4096  # an owner record is one short line


def _start_time(pid: int) -> str | None:
    """The kernel's start time of pid (clock ticks since boot), which survives pid reuse checks."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat_line = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    return stat_line.rsplit(")", 1)[1].split()[19]


def owner_token(pid: int | None = None) -> str:
    """host:pid:start-time of a process (default: this one)."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def owner_is_dead(token: str) -> bool:
    """True only when the owner ran on this host and that exact process is gone."""
    host, _, rest = token.partition(":")
    pid, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return _start_time(int(pid)) != started


@dataclass(frozen=True)
class OwnedDirectory:
    """One owner directory found in a temporary root."""

    path: Path
    owner: str  # host:pid:start-time

    @property
    def owner_gone(self) -> bool:
        return owner_is_dead(self.owner)


def _read_record(directory: Path) -> str | None:
    """The owner token in directory/owner, or None when it is not a short regular file."""
    try:
        fd = os.open(directory / OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, RECORD_MAX)
    except OSError:
        return None
    finally:
        os.close(fd)
    token = data.decode("utf-8", "replace").strip()
    return token if token.count(":") == 2 else None


def owned_directories(root: str | Path) -> list[OwnedDirectory]:
    """The owner directories in root that this user made (name prefix, a real directory owned
    by this uid, an owner record), sorted by path; a root that cannot be listed has none."""
    found = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(OWNER_PREFIX):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        token = _read_record(Path(entry.path))
        if token is not None:
            found.append(OwnedDirectory(Path(entry.path), token))
    return sorted(found, key=lambda owned: owned.path)


def default_roots() -> list[str]:
    """The temporary roots a run uses unless told otherwise: the temp dir, and memory."""
    roots = [tempfile.gettempdir()]
    if os.path.isdir(MEMORY_ROOT) and MEMORY_ROOT not in roots:
        roots.append(MEMORY_ROOT)
    return roots


def left_behind(roots: list[str]) -> list[OwnedDirectory]:
    """Owner directories in roots whose owner is gone."""
    return [owned for root in roots for owned in owned_directories(root) if owned.owner_gone]


class _OwnerDirectories:
    """This process's owner directory in each temporary root, made on first use; concurrent
    trials asking at once get the one directory, and the sweep runs once."""

    def __init__(self) -> None:
        self.made: dict[str, Path] = {}
        self.swept = False
        self.lock = threading.Lock()

    def get(self, parent: str | None) -> Path:
        root = parent or tempfile.gettempdir()
        with self.lock:
            if root not in self.made:
                if not self.swept:
                    self.swept = True
                    for owned in left_behind([*default_roots(), root]):
                        remove_later(owned.path)
                path = Path(tempfile.mkdtemp(prefix=OWNER_PREFIX, dir=root))
                (path / OWNER_FILE).write_text(owner_token() + "\n")
                self.made[root] = path
            return self.made[root]

    def remove_all(self) -> None:
        """At exit: once the trials' own removals are done, remove the owner directories."""
        with self.lock:
            if not self.made:
                return
            wait_for_file_work()
            for path in self.made.values():
                remove_later(path)
            self.made.clear()


_directories = _OwnerDirectories()


def _fresh_after_fork() -> None:
    global _directories
    _directories = _OwnerDirectories()


os.register_at_fork(after_in_child=_fresh_after_fork)
atexit.register(lambda: _directories.remove_all())  # before filework's stop (atexit is LIFO)


def owned_dir(parent: str | None = None) -> Path:
    """This process's owner directory in parent (default: the temp dir), where everything it
    makes for trials goes; the first call sweeps dead owners' directories."""
    return _directories.get(parent)
