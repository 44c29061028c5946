"""Slow file work no trial waits for, done by a helper process: removing finished trial
directories and writing trial artifacts into the run directory.

Both are mostly waiting for the disk (a directory made or removed on ext4 mounted with discard
can take a millisecond), and no trial needs the result. Threads of this process did it once;
their Python work between system calls took the interpreter lock from the trials' own file work
and process waits (about 5 % of a trial of ``true``). The helper works with threads of its own
interpreter; this process only writes records to the helper's stdin. The pipe is kept small
(4 KiB), so a disk slower than the trials throttles them instead of piling up work.
``wait_for_file_work`` waits until the helper has done everything handed over so far; at exit
the helper finishes and stops, also when this process was killed. A helper that cannot start
or has died is replaced by doing the work in place. Writes that could not be made are returned
by the next wait, one message per file, for the run to report, and so are trees that could not
be removed whole (one message per tree). Trees are removed by fdtree, whatever an agent left in
them; the helper runs its source.
"""

from __future__ import annotations

import atexit
import contextlib
import inspect
import os
import struct
import subprocess
import sys
import threading
from pathlib import Path

from pytest_agentbench.fs import fdtree

# Runs with -I -S: the standard library only, no site-packages, no environment. A record is a
# header (kind, length of the path, length of the data) then the path and the data. Kinds:
# r remove a tree, w write a file (making its directory), s once every earlier record is done,
# answer the failures since the last answer: their length (4 bytes), then UTF-8 lines;
# d make a directory, l make a symlink whose target is the data (both making parents).
HEADER = struct.Struct(">cII")
HELPER_LOOP = """
import os, queue, struct, threading
HEADER = struct.Struct(">cII")
work, failures = queue.Queue(16), []
def run():
    while True:
        kind, path, data = work.get()
        try:
            if kind == b"r":
                failures.extend(removal_failures(path, fdtree.remove_tree(path)))
            elif kind == b"d":
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                if kind == b"l":
                    os.symlink(data, path)
                else:
                    with open(path, "wb") as handle:
                        handle.write(data)
        except OSError as error:
            failures.append(f"could not write {path}: {error.strerror or error}")
        finally:
            work.task_done()
for _ in range(4):
    threading.Thread(target=run, daemon=True).start()
stream = os.fdopen(0, "rb")
while len(header := stream.read(HEADER.size)) == HEADER.size:
    kind, path_size, data_size = HEADER.unpack(header)
    path = os.fsdecode(stream.read(path_size))
    data = stream.read(data_size)
    if kind == b"s":
        work.join()
        answer = "".join(line + "\\n" for line in failures).encode("utf-8", "replace")
        failures.clear()
        os.write(1, struct.pack(">I", len(answer)) + answer)
    else:
        work.put((kind, path, data))
work.join()
"""


def removal_failures(path: str, problems: list[str]) -> list[str]:
    """At most one line per tree for what fdtree.remove_tree could not remove."""
    if not problems:
        return []
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return [f"could not remove all of {path}: {problems[0]}{more}"]


def _helper_program() -> str:
    """The helper's source: fdtree and removal_failures (standard library only), then the loop."""
    module = "fdtree = types.ModuleType('fdtree')\n"
    module += (
        f"exec(compile({Path(fdtree.__file__).read_text()!r}, 'fdtree', 'exec'), fdtree.__dict__)\n"
    )
    return "import types\n" + module + inspect.getsource(removal_failures) + HELPER_LOOP


HELPER = _helper_program()
PIPE_BYTES = 4096
HELPER_DIED = "the file helper stopped early: artifacts handed to it may be missing"


def _do_here(kind: bytes, path: str, data: bytes) -> list[str]:
    """Do one record in this process; the removal failures (a failed write raises)."""
    if kind == b"r":
        return removal_failures(path, fdtree.remove_tree(path))
    if kind == b"d":
        os.makedirs(path, exist_ok=True)
        return []
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if kind == b"l":
        os.symlink(data, path)
        return []
    with open(path, "wb") as handle:
        handle.write(data)
    return []


class FileWorker:
    """One helper process per interpreter, started on the first record, stopped at exit."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()
        self.failures: list[str] = []  # writes done in place that failed, until the next wait

    def put(self, kind: bytes, path: Path, data: bytes = b"") -> None:
        encoded = os.fsencode(path)
        with self.lock:
            try:
                self._send(HEADER.pack(kind, len(encoded), len(data)) + encoded + data)
            except OSError:  # no helper (could not start, or killed): do it here
                self._stop()
                try:
                    self.failures.extend(_do_here(kind, str(path), data))
                except OSError as error:
                    self.failures.append(f"could not write {path}: {error.strerror or error}")

    def wait(self) -> list[str]:
        """Block until everything handed over so far is done; the writes that failed."""
        with self.lock:
            failures, self.failures = self.failures, []
            if self.process is None:
                return failures
            assert self.process.stdout is not None
            try:
                self._send(HEADER.pack(b"s", 0, 0))
                answer = self._read_answer(self.process.stdout.fileno())
            except OSError:
                answer = None
            if answer is None:  # the helper died: the next put starts anew
                self._stop()
                return [*failures, HELPER_DIED]
            return failures + answer.decode("utf-8").splitlines()

    @staticmethod
    def _read_answer(fd: int) -> bytes | None:
        """The helper's answer to a wait: a 4-byte length, then that many bytes (None: EOF)."""
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">I", data[:4])[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            data += chunk
        return data[4:]

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
                start_new_session=True,  # a Ctrl-C meant for the run does not stop the work
            )
            assert self.process.stdin is not None
            with contextlib.suppress(AttributeError, OSError):  # Linux only
                import fcntl

                fcntl.fcntl(self.process.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        assert self.process.stdin is not None
        fd = self.process.stdin.fileno()
        view = memoryview(record)
        while view:
            view = view[os.write(fd, view) :]

    def forget_after_fork(self) -> None:
        """In a forked child: drop the parent's pipes, so the parent's helper still sees EOF."""
        if self.process is not None:
            for pipe in (self.process.stdin, self.process.stdout):
                with contextlib.suppress(OSError):
                    assert pipe is not None
                    pipe.close()
        self.process = None


_worker = FileWorker()


def _fresh_worker_after_fork() -> None:
    global _worker
    _worker.forget_after_fork()
    _worker = FileWorker()


os.register_at_fork(after_in_child=_fresh_worker_after_fork)


def remove_later(path: Path) -> None:
    """Remove a directory tree soon, off the trial's critical path."""
    _worker.put(b"r", path)


def write_later(path: Path, data: bytes) -> None:
    """Write data to path soon (making its directory), off the trial's critical path."""
    _worker.put(b"w", path, data)


def make_dir_later(path: Path) -> None:
    """Make a directory (and its parents) soon, off the trial's critical path."""
    _worker.put(b"d", path)


def symlink_later(path: Path, target: bytes) -> None:
    """Make path a symlink to target soon (making its directory); the target is not followed."""
    _worker.put(b"l", path, target)


def wait_for_file_work() -> list[str]:
    """Block until every removal and write handed over so far is done; what failed."""
    return _worker.wait()


def stop_file_work() -> None:
    """Finish what is left and stop the helper (at interpreter exit)."""
    _worker.stop()


atexit.register(stop_file_work)
