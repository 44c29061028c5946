"""Token counting from the wire: usage blocks of the Responses, Messages and Chat Completions
protocols, streamed (Server-Sent Events) or not, in the project's token meaning.

The project's meaning (agents.base.TokenUsage): input counts every prompt token, cached and
cache-written ones included; cached_input and cache_write are parts of it; output includes
reasoning. A field the protocol does not report is None, and a response that carries no usage
at all is unmeasured (None), never zero.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

FIELDS = ("input", "cached_input", "cache_write", "output", "reasoning")

RESPONSES = "responses"
MESSAGES = "messages"
CHAT = "chat"


def protocol_of(path: str) -> str | None:
    """The protocol a request path speaks, or None for paths the meter only forwards."""
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/responses"):
        return RESPONSES
    if path.endswith("/messages"):
        return MESSAGES
    if path.endswith("/chat/completions"):
        return CHAT
    return None


@dataclass(frozen=True)
class WireUsage:
    """What one response said it used, in the project's meaning; None where it did not say."""

    input: int | None = None
    cached_input: int | None = None
    cache_write: int | None = None
    output: int | None = None
    reasoning: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        return asdict(self)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _sum(*values: int | None) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _details(usage: Mapping[str, Any], key: str, field: str) -> int | None:
    details = usage.get(key)
    return _int(details.get(field)) if isinstance(details, Mapping) else None


def openai_usage(usage: Any, prompt: str, completion: str) -> WireUsage | None:
    """Responses (input_tokens/output_tokens) and Chat (prompt_tokens/completion_tokens) usage:
    both count cached (and cache-written) tokens inside input and reasoning inside output
    already. Cache writes come as `cache_write_tokens` in the input details where the
    provider reports them (the field codex reads); elsewhere they are unknown."""
    if not isinstance(usage, Mapping):
        return None
    return WireUsage(
        input=_int(usage.get(f"{prompt}_tokens")),
        cached_input=_details(usage, f"{prompt}_tokens_details", "cached_tokens"),
        cache_write=_details(usage, f"{prompt}_tokens_details", "cache_write_tokens"),
        output=_int(usage.get(f"{completion}_tokens")),
        reasoning=_details(usage, f"{completion}_tokens_details", "reasoning_tokens"),
    )


def messages_usage(usage: Any) -> WireUsage | None:
    """Anthropic usage: input_tokens excludes cache reads and writes, which come apart."""
    if not isinstance(usage, Mapping):
        return None
    uncached = _int(usage.get("input_tokens"))
    reads = _int(usage.get("cache_read_input_tokens"))
    writes = _int(usage.get("cache_creation_input_tokens"))
    # An absent cache field means no caching was involved in a response that did report input.
    reads_known = 0 if reads is None and uncached is not None else reads
    writes_known = 0 if writes is None and uncached is not None else writes
    return WireUsage(
        input=_sum(uncached, reads_known, writes_known),
        cached_input=reads_known,
        cache_write=writes_known,
        output=_int(usage.get("output_tokens")),
    )


def body_usage(protocol: str, body: bytes) -> WireUsage | None:
    """Usage of a non-streamed JSON response body; None when it has none."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(data, Mapping):
        return None
    usage = data.get("usage")
    if protocol == RESPONSES:
        return openai_usage(usage, "input", "output")
    if protocol == CHAT:
        return openai_usage(usage, "prompt", "completion")
    return messages_usage(usage)


class EventSplitter:
    """Cuts a byte stream into whole Server-Sent Events (raw bytes, separator included).

    Each byte is searched once, so a long event arriving in many chunks costs linear time."""

    def __init__(self) -> None:
        self._pending = bytearray()
        self._scanned = 0  # no event ends before this offset of _pending

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        self._pending += chunk
        while True:
            cut = _event_end(self._pending, max(0, self._scanned - 3))
            if cut < 0:
                self._scanned = len(self._pending)
                return
            event = bytes(self._pending[:cut])
            del self._pending[:cut]
            self._scanned = 0
            yield event

    def rest(self) -> bytes:
        """Bytes after the last whole event (a stream cut off mid-event)."""
        rest = bytes(self._pending)
        self._pending.clear()
        self._scanned = 0
        return rest


def _event_end(data: bytearray, start: int) -> int:
    """The end of the first blank line (LF or CRLF) at or after start, or -1."""
    newline = data.find(b"\n", start)
    while newline >= 0:
        after = newline + 1
        if data[after : after + 1] == b"\r":
            after += 1
        if data[after : after + 1] == b"\n":
            return after + 1
        newline = data.find(b"\n", newline + 1)
    return -1


def event_data(event: bytes) -> Any:
    """The JSON of an event's data lines, or None ([DONE], comments, non-JSON, and events
    that cannot carry usage: only those are parsed, so a long stream relays at speed)."""
    if b'"usage"' not in event:
        return None
    return event_json(event)


def event_json(event: bytes) -> Any:
    """The JSON of any event's data lines, or None ([DONE], comments, non-JSON)."""
    lines = [line[5:].lstrip() for line in event.splitlines() if line.startswith(b"data:")]
    if not lines:
        return None
    try:
        return json.loads(b"\n".join(lines))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


class StreamCounter:
    """Reads the usage out of one streamed response, event by event."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol
        self._start: Mapping[str, Any] | None = None  # Messages: message_start usage
        self._final: Mapping[str, Any] | None = None  # Messages: last message_delta usage
        self.usage: WireUsage | None = None

    def event(self, data: Any) -> bool:
        """Take one event's JSON; True when it is a usage-only Chat chunk (choices empty)."""
        if not isinstance(data, Mapping):
            return False
        if self.protocol == RESPONSES:
            response = data.get("response")
            if isinstance(response, Mapping) and response.get("usage") is not None:
                self.usage = openai_usage(response.get("usage"), "input", "output")
        elif self.protocol == CHAT:
            if data.get("usage") is not None:
                self.usage = openai_usage(data.get("usage"), "prompt", "completion")
                return not data.get("choices")
        else:
            kind = data.get("type")
            message = data.get("message")
            if kind == "message_start" and isinstance(message, Mapping):
                self._start = message.get("usage")
            elif kind == "message_delta" and isinstance(data.get("usage"), Mapping):
                self._final = data["usage"]
            self.usage = self._messages()
        return False

    def _messages(self) -> WireUsage | None:
        if not isinstance(self._start, Mapping):
            return None
        merged = {**self._start, **(self._final or {})}
        return messages_usage(merged)
