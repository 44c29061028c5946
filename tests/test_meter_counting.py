"""Wire counting: each protocol's usage, streamed and not, in the project's token meaning."""

from __future__ import annotations

import itertools
import json

from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.meter.counting import (
    CHAT,
    MESSAGES,
    RESPONSES,
    EventSplitter,
    StreamCounter,
    WireUsage,
    body_usage,
    event_data,
    protocol_of,
)
from pytest_agentbench.testing.model_server import PROTOCOLS, Reply, Usage

SERVED = Usage(input=1200, cached_input=900, cache_write=100, output=70, reasoning=20)
PATH_OF = {RESPONSES: "/v1/responses", MESSAGES: "/v1/messages", CHAT: "/v1/chat/completions"}


def recorded_stream(protocol: str, usage: Usage = SERVED) -> bytes:
    """A stream as the scripted model server sends it for a one-message reply."""
    return b"".join(PROTOCOLS[PATH_OF[protocol]].stream(Reply(usage, text="hi"), "m", 1))


def count(protocol: str, stream: bytes, cuts: list[int] | None = None) -> WireUsage | None:
    counter = StreamCounter(protocol)
    splitter = EventSplitter()
    bounds = [0, *sorted(set(cuts or [])), len(stream)]
    for start, end in itertools.pairwise(bounds):
        for event in splitter.feed(stream[start:end]):
            counter.event(event_data(event))
    return counter.usage


def test_paths_name_their_protocol() -> None:
    assert protocol_of("/v1/responses") == RESPONSES
    assert protocol_of("/v1/messages?beta=true") == MESSAGES
    assert protocol_of("/chat/completions") == CHAT
    assert protocol_of("/v1/models") is None


def test_responses_stream_counts_in_project_meaning() -> None:
    # Cache writes, where the provider reports them, in input_tokens_details.cache_write_tokens
    # (the field codex reads) ...
    assert count(RESPONSES, recorded_stream(RESPONSES)) == WireUsage(1200, 900, 100, 70, 20)
    # ... and where it does not: unknown, not zero.
    unwritten = recorded_stream(RESPONSES, Usage(input=1200, cached_input=900, output=70))
    assert count(RESPONSES, unwritten) == WireUsage(1200, 900, None, 70, 0)


def test_messages_stream_adds_cache_reads_and_writes_to_input() -> None:
    assert count(MESSAGES, recorded_stream(MESSAGES)) == WireUsage(1200, 900, 100, 70, None)


def test_chat_stream_reads_the_usage_chunk() -> None:
    assert count(CHAT, recorded_stream(CHAT)) == WireUsage(1200, 900, None, 70, 20)


def test_messages_final_delta_overrides_the_start_usage() -> None:
    start = {
        "type": "message_start",
        "message": {"usage": {"input_tokens": 10, "output_tokens": 1}},
    }
    delta = {"type": "message_delta", "usage": {"output_tokens": 42}}
    stream = b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in (start, delta)
    )
    assert count(MESSAGES, stream) == WireUsage(10, 0, 0, 42, None)


def test_stream_without_usage_is_unmeasured() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "x"}}]}
    stream = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
    assert count(CHAT, stream) is None


def test_usage_only_chat_chunk_is_recognised() -> None:
    counter = StreamCounter(CHAT)
    assert counter.event({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}})
    assert not counter.event({"choices": [{"delta": {}}], "usage": None})


def test_non_streamed_bodies() -> None:
    responses = {
        "usage": {
            "input_tokens": 50,
            "input_tokens_details": {"cached_tokens": 20},
            "output_tokens": 9,
            "output_tokens_details": {"reasoning_tokens": 4},
        }
    }
    messages = {
        "usage": {
            "input_tokens": 5,
            "cache_read_input_tokens": 30,
            "cache_creation_input_tokens": 15,
            "output_tokens": 8,
        }
    }
    chat = {"usage": {"prompt_tokens": 12, "completion_tokens": 3}}
    assert body_usage(RESPONSES, json.dumps(responses).encode()) == WireUsage(50, 20, None, 9, 4)
    assert body_usage(MESSAGES, json.dumps(messages).encode()) == WireUsage(50, 30, 15, 8, None)
    assert body_usage(CHAT, json.dumps(chat).encode()) == WireUsage(12, None, None, 3, None)
    assert body_usage(CHAT, b'{"choices": []}') is None
    assert body_usage(CHAT, b"not json") is None


@given(
    protocol=st.sampled_from([RESPONSES, MESSAGES, CHAT]),
    cuts=st.lists(st.integers(min_value=1, max_value=2000), max_size=12),
    crlf=st.booleans(),
)
def test_any_chunking_counts_the_same_and_loses_no_byte(
    protocol: str, cuts: list[int], crlf: bool
) -> None:
    stream = recorded_stream(protocol)
    if crlf:
        stream = stream.replace(b"\n", b"\r\n")
    cuts = [c for c in cuts if c < len(stream)]
    assert count(protocol, stream, cuts) == count(protocol, stream)
    splitter = EventSplitter()
    bounds = [0, *sorted(set(cuts)), len(stream)]
    events = [e for a, b in itertools.pairwise(bounds) for e in splitter.feed(stream[a:b])]
    assert b"".join(events) + splitter.rest() == stream
