"""Content hashes that pin a task's fixture, so any change to a task is visible."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

# A symlink or special file in a hashed directory: its key is the path and one of these
# markers after a NUL, which no file path holds, so it never collides with a regular file.
SYMLINK_MARK = "\0symlink"
SPECIAL_MARK = "\0special"
EMPTY_DIR_MARK = "\0empty-dir"


def _feed_tree(digest: hashlib._Hash, label: bytes, files: Mapping[str, bytes]) -> None:
    digest.update(label + b"\0" + str(len(files)).encode() + b"\0")
    for path in sorted(files):
        data = files[path]
        digest.update(path.encode("utf-8") + b"\0" + str(len(data)).encode() + b"\0")
        digest.update(data)


def fixture_hash(
    prompt: str,
    input_files: Mapping[str, bytes],
    expected: Mapping[str, bytes] | None,
    verifier: bytes | None = None,
    task_files: Mapping[str, bytes] | None = None,
    segments: int | None = None,
) -> str:
    """SHA-256 over a length-prefixed canonical serialization of everything that defines a task.

    ``task_files``: the task directory's files when its verifier may read more than its own
    script (see ``directory_files``); ``segments``: the legs the task's own file asks for, which
    make it another experiment. Length prefixes make the encoding unambiguous: no two
    different fixtures share a stream; a fixture without task files or segments hashes as it
    always has.
    """
    digest = hashlib.sha256(b"agentbench-fixture-v1\0")
    encoded_prompt = prompt.encode("utf-8")
    digest.update(b"prompt\0" + str(len(encoded_prompt)).encode() + b"\0" + encoded_prompt)
    _feed_tree(digest, b"input", input_files)
    if expected is not None:
        _feed_tree(digest, b"expected", expected)
    if verifier is not None:
        digest.update(b"verifier\0" + str(len(verifier)).encode() + b"\0" + verifier)
    if task_files is not None:
        _feed_tree(digest, b"task-files", task_files)
    if segments is not None:
        digest.update(b"segments\0" + str(segments).encode() + b"\0")
    return digest.hexdigest()


def directory_files(root: Path, skip: Callable[[os.DirEntry[str]], bool]) -> dict[str, bytes]:
    """Every entry under root but what ``skip`` leaves out, as relative POSIX path -> bytes.

    A regular file counts by its bytes; a symlink by where it points (its link text, never
    followed, so a link out of the directory cannot pull in the world); a FIFO, socket or
    device by its presence alone (reading it could block). Empty directories count too.
    """
    files: dict[str, bytes] = {}
    pending = [(root, "")]
    while pending:
        folder, prefix = pending.pop()
        with os.scandir(folder) as entries:
            kept = [entry for entry in entries if not skip(entry)]
        if not kept and prefix:
            files[prefix.rstrip("/") + EMPTY_DIR_MARK] = b""
        for entry in kept:
            rel = prefix + entry.name
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                files[rel + SYMLINK_MARK] = os.fsencode(os.readlink(entry.path))
            elif stat.S_ISDIR(mode):
                pending.append((Path(entry.path), rel + "/"))
            elif stat.S_ISREG(mode):
                files[rel] = Path(entry.path).read_bytes()
            else:
                files[rel + SPECIAL_MARK] = b""
    return files


def task_set_hash(fixture_hashes: Iterable[str]) -> str:
    """Hash of a whole task selection, independent of the order tasks were discovered in."""
    payload = json.dumps(sorted(fixture_hashes)).encode()
    return hashlib.sha256(payload).hexdigest()


def stable_int(*parts: object) -> int:
    """A 64-bit integer derived from parts; identical in every process, platform and Python."""
    text = "\x1f".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
