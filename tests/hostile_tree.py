"""Build, in a directory, what a hostile agent leaves: run as a script (a command agent) or
imported by tests. Standard library only.

    python hostile_tree.py DIR [--sparse]

DIR gets: a.txt rewritten to "2\\n"; names that are not UTF-8, hold a terminal escape or a
backslash; a chain DEPTH directories deep of NAME_LENGTH-character names (past PATH_MAX) with a
file at the bottom; a directory and files of mode 000; a FIFO, a unix socket and a symlink;
with --sparse also a SPARSE_SIZE sparse file (instant: no block is written).
"""

from __future__ import annotations

import os
import socket
import sys

DEPTH = 300
NAME_LENGTH = 30
SPARSE_SIZE = 20 << 30
DEEP_NAME = "d" * NAME_LENGTH
DEEP_FILE = "/".join([DEEP_NAME] * DEPTH) + "/deep.txt"  # as names.encode shows it
ODD_NAMES = {
    b"bad\xff": "bad\\xff",
    b"esc\x1b[31mred": "esc\x1b[31mred",
    b"back\\slash": "back\\\\slash",
}
SPECIAL = ["fifo", "link", "sock"]  # graded invalid, never opened


def build(root: str, sparse: bool = False) -> None:
    """Leave everything in root (which exists); modes 000 are set last."""
    with open(os.path.join(root, "a.txt"), "w") as handle:
        handle.write("2\n")
    for raw in ODD_NAMES:
        with open(os.path.join(os.fsencode(root), raw), "wb") as handle:
            handle.write(b"odd\n")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(DEPTH):  # relative steps: no path here is ever longer than one name
        os.mkdir(DEEP_NAME, dir_fd=fd)
        child = os.open(DEEP_NAME, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.chmod(fd, 0)  # the deepest directory: unreadable too
    os.close(fd)
    os.mkfifo(os.path.join(root, "fifo"))
    os.symlink("/etc", os.path.join(root, "link"))
    # A socket path must fit in sun_path (108 bytes): bind relative to root.
    here = os.getcwd()
    os.chdir(root)
    try:
        server = socket.socket(socket.AF_UNIX)
        server.bind("sock")
        server.close()
    finally:
        os.chdir(here)
    if sparse:
        with open(os.path.join(root, "big.txt"), "wb") as handle:
            handle.truncate(SPARSE_SIZE)
    locked = os.path.join(root, "locked")
    os.mkdir(locked)
    with open(os.path.join(locked, "inside.txt"), "w") as handle:
        handle.write("x\n")
    with open(os.path.join(root, "secret.txt"), "w") as handle:
        handle.write("s\n")
    os.chmod(os.path.join(locked, "inside.txt"), 0)
    os.chmod(locked, 0)
    os.chmod(os.path.join(root, "secret.txt"), 0)


if __name__ == "__main__":
    build(sys.argv[1], sparse="--sparse" in sys.argv[2:])
