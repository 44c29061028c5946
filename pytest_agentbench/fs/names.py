"""Entry names as text: any byte sequence, in one reversible encoding strict JSON accepts.

An agent may leave a file whose name is not UTF-8, or holds a backslash, a newline or a
terminal escape. Every name the harness records (grades, observations.jsonl, reports) is
``encode(raw bytes)``:

- valid UTF-8 stays as it is;
- a backslash becomes two backslashes (``\\`` → ``\\\\``);
- each byte that is not part of valid UTF-8 becomes ``\\xNN`` (lower-case hex), so the byte
  0xFF is ``\\xff``.

``decode`` gives the bytes back exactly, and accepts only what ``encode`` makes. ``show`` is for
people (terminal, Markdown, HTML): the same text with control characters also escaped, ASCII
ones as ``\\xNN`` (the byte they are) and other invisible controls as ``\\uNNNN``, so no escape
sequence reaches a terminal and ``show`` never makes two names look alike.
"""

from __future__ import annotations

import os
import re
from typing import Any

JSON = Any  # a value json.loads returns

_TO_ESCAPE = re.compile("[\\\\\udc80-\udcff]")  # a backslash, or a byte surrogateescape kept
_ESCAPE = re.compile(r"\\(\\|x[0-9a-f]{2})")
# C0 controls and DEL; then C1 controls, the line and paragraph separators and the
# bidirectional controls, which can make a name read as another.
_ASCII_CONTROL = re.compile("[\x00-\x1f\x7f]")
_OTHER_CONTROL = re.compile("[\x80-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return "\\\\" if char == "\\" else f"\\x{ord(char) - 0xDC00:02x}"


def encode(raw: bytes) -> str:
    """The text form of a name (or a relative path: ``/`` is plain ASCII) of any bytes."""
    text = raw.decode("utf-8", "surrogateescape")
    if text.isascii() and "\\" not in text:  # nearly every name: nothing to escape
        return text
    return _TO_ESCAPE.sub(_escape, text)


def decode(text: str) -> bytes:
    """The bytes ``encode`` made text of; ValueError for text ``encode`` cannot make."""
    if "\\" not in text:
        return text.encode("utf-8")  # UnicodeEncodeError (a ValueError) for a lone surrogate
    out = bytearray()
    position = 0
    for match in _ESCAPE.finditer(text):
        out += text[position : match.start()].encode("utf-8")
        escaped = match.group(1)
        out += b"\\" if escaped == "\\" else bytes([int(escaped[1:], 16)])
        position = match.end()
    out += text[position:].encode("utf-8")
    raw = bytes(out)
    if encode(raw) != text:  # a stray backslash, or \xNN for a byte that is valid UTF-8
        raise ValueError(f"{text!r} is not an encoded name: see pytest_agentbench.fs.names")
    return raw


def from_os(path: str) -> str:
    """The encoded form of a str path from the os module (undecodable bytes kept as
    surrogates, as os.fsdecode does)."""
    return encode(os.fsencode(path))


def to_os(text: str) -> str:
    """The str the os module uses for an encoded path (the inverse of from_os)."""
    return os.fsdecode(decode(text))


def show(text: str) -> str:
    """An encoded name for people: control characters escaped too, nothing invisible."""
    text = _ASCII_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return _OTHER_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _surrogate_free(text: str) -> str:
    """Free text (not a name) with each byte os.fsdecode kept as a surrogate written \\xNN."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate os.fsdecode does not make
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
        return _TO_ESCAPE.sub(
            lambda m: m.group() if m.group() == "\\" else _escape(m),
            raw.decode("utf-8", "surrogateescape"),
        )
    return text


def json_safe(value: JSON) -> JSON:
    """value with every string UTF-8 can write: a byte of an undecodable name that reached
    free text (an error message, a cause) becomes \\xNN. Values that are already fine come
    back as they are."""
    if isinstance(value, str):
        return _surrogate_free(value)
    if isinstance(value, list):
        return [json_safe(item) for item in value]
    if isinstance(value, dict):
        return {_surrogate_free(key): json_safe(item) for key, item in value.items()}
    return value
