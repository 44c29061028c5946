"""Finished trial directories are removed by a helper process, off the trial's path.

Removing a tree is mostly waiting for the disk (rmdir on ext4 mounted with discard waits about
a millisecond for the device), and no trial needs the result. Threads of this process did it
before; their Python work between system calls took the interpreter lock from the trials' own
file work and process waits (about 5 % of a trial of ``true``). The helper removes with threads
of its own interpreter; this process only writes each path to the helper's stdin. The pipe is
kept small (4 KiB, some 60 paths, on Linux), so a disk slower than the trials throttles them
instead of piling up directories. ``wait_for_removals`` closes the pipe and waits for the
helper to finish. A helper that cannot start or has died is replaced by removing in place.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

# Runs with -I -S: the standard library only, no site-packages, no environment.
HELPER = """
import os, queue, shutil, threading
work = queue.Queue(16)
def remove():
    while (path := work.get()) is not None:
        shutil.rmtree(path, ignore_errors=True)
threads = [threading.Thread(target=remove) for _ in range(4)]
for thread in threads:
    thread.start()
pending = b""
while chunk := os.read(0, 65536):
    *paths, pending = (pending + chunk).split(b"\\0")
    for path in paths:
        work.put(os.fsdecode(path))
for thread in threads:
    work.put(None)
for thread in threads:
    thread.join()
"""
PIPE_BYTES = 4096


class Remover:
    """One helper process per interpreter, started on the first removal."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()

    def put(self, path: Path) -> None:
        record = os.fsencode(path) + b"\0"
        with self.lock:
            try:
                fd = self._helper_stdin()
                while record:
                    record = record[os.write(fd, record) :]
            except OSError:  # no helper (could not start, or killed): remove here
                self._reap()
                shutil.rmtree(path, ignore_errors=True)

    def _helper_stdin(self) -> int:
        if self.process is None:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", HELPER],
                stdin=subprocess.PIPE,
                start_new_session=True,  # a Ctrl-C meant for the run does not stop the cleanup
            )
            assert self.process.stdin is not None
            with contextlib.suppress(AttributeError, OSError):  # Linux only
                import fcntl

                fcntl.fcntl(self.process.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        assert self.process.stdin is not None
        return self.process.stdin.fileno()

    def wait(self) -> None:
        """Block until every path handed over so far is removed."""
        with self.lock:
            self._reap()

    def _reap(self) -> None:
        if self.process is not None:
            process, self.process = self.process, None
            with contextlib.suppress(OSError):
                assert process.stdin is not None
                process.stdin.close()
            process.wait()

    def forget_after_fork(self) -> None:
        """In a forked child: drop the parent's pipe, so the parent's helper still sees EOF."""
        if self.process is not None and self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        self.process = None


_remover = Remover()


def _fresh_remover_after_fork() -> None:
    global _remover
    _remover.forget_after_fork()
    _remover = Remover()


os.register_at_fork(after_in_child=_fresh_remover_after_fork)


def remove_later(path: Path) -> None:
    """Remove a directory tree soon, off the trial's critical path."""
    _remover.put(path)


def wait_for_removals() -> None:
    """Block until every directory handed to remove_later is gone (run at exit, too)."""
    _remover.wait()


atexit.register(wait_for_removals)
