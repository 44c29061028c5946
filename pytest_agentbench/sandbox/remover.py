"""Finished trial directories are removed by a helper process, off the trial's path.

Removing a tree is mostly waiting for the disk (rmdir on ext4 mounted with discard waits about
a millisecond for the device), and no trial needs the result. Threads of this process did it
before; their Python work between system calls took the interpreter lock from the trials' own
file work and process waits (about 5 % of a trial of ``true``). The helper removes with threads
of its own interpreter; this process only writes each path to the helper's stdin. The pipe is
kept small (4 KiB, some 60 paths, on Linux), so a disk slower than the trials throttles them
instead of piling up directories. ``wait_for_removals`` waits until the helper has removed
everything handed over so far; at exit the helper finishes and stops. A helper that cannot
start or has died is replaced by removing in place.
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

# Runs with -I -S: the standard library only, no site-packages, no environment. Each record on
# stdin is a path ending in NUL; an empty record asks for one byte on stdout once every path
# before it is removed.
HELPER = """
import os, queue, shutil, threading
work = queue.Queue(16)
def remove():
    while True:
        shutil.rmtree(work.get(), ignore_errors=True)
        work.task_done()
for _ in range(4):
    threading.Thread(target=remove, daemon=True).start()
pending = b""
while chunk := os.read(0, 65536):
    *records, pending = (pending + chunk).split(b"\\0")
    for record in records:
        if record:
            work.put(os.fsdecode(record))
        else:
            work.join()
            os.write(1, b".")
work.join()
"""
PIPE_BYTES = 4096


class Remover:
    """One helper process per interpreter, started on the first removal, stopped at exit."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()

    def put(self, path: Path) -> None:
        with self.lock:
            try:
                self._send(os.fsencode(path) + b"\0")
            except OSError:  # no helper (could not start, or killed): remove here
                self._stop()
                shutil.rmtree(path, ignore_errors=True)

    def wait(self) -> None:
        """Block until every path handed over so far is removed."""
        with self.lock:
            if self.process is None:
                return
            assert self.process.stdout is not None
            try:
                self._send(b"\0")
                done = os.read(self.process.stdout.fileno(), 1)
            except OSError:
                done = b""
            if not done:  # the helper died: what it left, it left; the next put starts anew
                self._stop()

    def stop(self) -> None:
        """Let the helper finish what it was given and exit (at interpreter exit)."""
        with self.lock:
            self._stop()

    def _stop(self) -> None:
        if self.process is not None:
            process, self.process = self.process, None
            for pipe in (process.stdin, process.stdout):
                with contextlib.suppress(OSError):
                    assert pipe is not None
                    pipe.close()
            process.wait()

    def _send(self, record: bytes) -> None:
        if self.process is None:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", HELPER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,  # a Ctrl-C meant for the run does not stop the cleanup
            )
            assert self.process.stdin is not None
            with contextlib.suppress(AttributeError, OSError):  # Linux only
                import fcntl

                fcntl.fcntl(self.process.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        assert self.process.stdin is not None
        fd = self.process.stdin.fileno()
        while record:
            record = record[os.write(fd, record) :]

    def forget_after_fork(self) -> None:
        """In a forked child: drop the parent's pipes, so the parent's helper still sees EOF."""
        if self.process is not None:
            for pipe in (self.process.stdin, self.process.stdout):
                with contextlib.suppress(OSError):
                    assert pipe is not None
                    pipe.close()
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
    """Block until every directory handed to remove_later is gone."""
    _remover.wait()


def stop_removals() -> None:
    """Remove what is left and stop the helper (at interpreter exit)."""
    _remover.stop()


atexit.register(stop_removals)
