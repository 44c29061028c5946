"""Content hashes that pin a task's fixture, so any change to a task is visible."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping


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
) -> str:
    """SHA-256 over a length-prefixed canonical serialization of everything that defines a task.

    Length prefixes make the encoding unambiguous: no two different fixtures share a stream.
    """
    digest = hashlib.sha256(b"agentbench-fixture-v1\0")
    encoded_prompt = prompt.encode("utf-8")
    digest.update(b"prompt\0" + str(len(encoded_prompt)).encode() + b"\0" + encoded_prompt)
    _feed_tree(digest, b"input", input_files)
    if expected is not None:
        _feed_tree(digest, b"expected", expected)
    if verifier is not None:
        digest.update(b"verifier\0" + str(len(verifier)).encode() + b"\0" + verifier)
    return digest.hexdigest()


def task_set_hash(fixture_hashes: Iterable[str]) -> str:
    """Hash of a whole task selection, independent of the order tasks were discovered in."""
    payload = json.dumps(sorted(fixture_hashes)).encode()
    return hashlib.sha256(payload).hexdigest()


def stable_int(*parts: object) -> int:
    """A 64-bit integer derived from parts; identical in every process, platform and Python."""
    text = "\x1f".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
