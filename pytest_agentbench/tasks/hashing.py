"""Fixture hashes: a task's content (prompt, trees, verifier) pinned by SHA-256.

The serialization is canonical: paths sorted, every field length-prefixed, so two
different tasks cannot serialize to the same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

_MAGIC = b"agentbench-fixture-1\x00"


def _field(data: bytes) -> bytes:
    return len(data).to_bytes(8, "big") + data


def _tree(files: Mapping[str, bytes] | None) -> bytes:
    if files is None:
        return b"\x00"
    parts = [b"\x01", len(files).to_bytes(8, "big")]
    for path in sorted(files):
        parts += [_field(path.encode("utf-8")), _field(bytes(files[path]))]
    return b"".join(parts)


def fixture_hash(
    prompt: str,
    input_files: Mapping[str, bytes],
    expected: Mapping[str, bytes] | None,
    verifier: bytes | None,
) -> str:
    """SHA-256 hex of prompt, input tree, expected tree (or None) and verifier (or None)."""
    digest = hashlib.sha256(_MAGIC)
    digest.update(_field(prompt.encode("utf-8")))
    digest.update(_tree(input_files))
    digest.update(_tree(expected))
    digest.update(b"\x00" if verifier is None else b"\x01" + _field(verifier))
    return digest.hexdigest()


def task_set_hash(fixture_hashes: Iterable[str]) -> str:
    """SHA-256 hex over the sorted fixture hashes: the same set gives the same hash."""
    digest = hashlib.sha256(b"agentbench-task-set-1\x00")
    for value in sorted(fixture_hashes):
        digest.update(value.encode("ascii") + b"\n")
    return digest.hexdigest()
