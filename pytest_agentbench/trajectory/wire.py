"""A round's trajectory from the wire: the meter's bodies lines (meter/server.py) read back
into steps, one per model request, the same way whichever CLI sent them.

The response says what the model wrote, reasoned and asked for; the tool results are only in
the next request the CLI sent (it hands them back to the model), so each is attached to the
earlier call with its id. A request that failed or was refused is a system step, so retries
show. Tokens are the meter's (the project's meaning, meter/counting.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_agentbench.meter.counting import CHAT, MESSAGES, RESPONSES, EventSplitter, event_json
from pytest_agentbench.trajectory.kinds import classify
from pytest_agentbench.trajectory.model import (
    MESSAGE_LIMIT,
    RESULT_LIMIT,
    Step,
    ToolCall,
    bounded_text,
)

TOKEN_FIELDS = ("input", "cached_input", "output", "reasoning")


@dataclass
class _Reply:
    """What one response said, whatever its protocol."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # id, name, args
    model: str | None = None


def steps(records: Sequence[Mapping[str, Any]]) -> list[Step]:
    """One round's wire records (decoded bodies lines) as steps, in request order."""
    found: list[Step] = []
    calls: dict[str, ToolCall] = {}
    for record in sorted(records, key=lambda r: _int(r.get("index")) or 0):
        protocol = record.get("protocol")
        if protocol not in (RESPONSES, MESSAGES, CHAT):
            continue  # a path the meter only forwards (a model list): no model turn
        for call_id, text in _results(protocol, record.get("request")):
            call = calls.get(call_id)
            if call is not None and call.result is None:
                call.result = bounded_text(text, RESULT_LIMIT)
        failed = _failure(record)
        if failed is not None:
            found.append(
                Step(
                    "system",
                    message=f"model request {record.get('index')}: {failed}",
                    latency_s=record.get("duration_s"),
                    request=_int(record.get("index")),
                )
            )
            continue
        step = _agent_step(record, _reply(protocol, str(record.get("response") or "")))
        calls.update((call.call_id, call) for call in step.tool_calls if call.call_id)
        found.append(step)
    return found


def _failure(record: Mapping[str, Any]) -> str | None:
    """How a request failed, for its system step; None when it was answered."""
    status, injected, failure = record.get("status"), record.get("injected"), record.get("failure")
    if injected:
        what = f"http {injected}" if str(injected).isdigit() else str(injected)
        return f"{what} (injected)"
    if failure:
        return str(failure)
    if not isinstance(status, int):
        return "no answer"
    return None if 200 <= status < 300 else f"http {status}"


def _agent_step(record: Mapping[str, Any], reply: _Reply) -> Step:
    usage = record.get("usage")
    tokens = {k: _int(usage.get(k)) for k in TOKEN_FIELDS} if isinstance(usage, Mapping) else None
    tool_calls = []
    for call_id, name, arguments in reply.calls:
        kind, paths, command = classify(name, arguments)
        tool_calls.append(ToolCall(call_id, name, kind, arguments, paths=paths, command=command))
    return Step(
        "agent",
        message=bounded_text("".join(reply.text), MESSAGE_LIMIT) or "",
        reasoning=bounded_text("\n".join(reply.reasoning), MESSAGE_LIMIT) or None,
        tool_calls=tool_calls,
        tokens=tokens,
        tokens_from="wire" if tokens is not None else None,
        latency_s=record.get("duration_s"),
        model=reply.model,
        request=_int(record.get("index")),
        side=not record.get("has_tools"),
    )


def _reply(protocol: str, response: str) -> _Reply:
    try:
        body = json.loads(response)
    except json.JSONDecodeError:
        body = None
    if isinstance(body, Mapping):  # not streamed
        return _BODIES[protocol](body)
    return _STREAMS[protocol](_events(response))


def _events(response: str) -> list[Mapping[str, Any]]:
    """The JSON events of a relayed stream (a cut-off last event is read as far as it goes)."""
    splitter = EventSplitter()
    raw = [*splitter.feed(response.encode()), splitter.rest()]
    return [data for event in raw if isinstance(data := event_json(event), Mapping)]


# Responses ------------------------------------------------------------------------------------


def _responses_body(body: Mapping[str, Any]) -> _Reply:
    reply = _Reply(model=_str(body.get("model")))
    for item in _list(body.get("output")):
        _responses_item(reply, item)
    return reply


def _responses_stream(events: list[Mapping[str, Any]]) -> _Reply:
    reply = _Reply()
    done = [e.get("item") for e in events if e.get("type") == "response.output_item.done"]
    final: Mapping[str, Any] = {}
    for event in events:
        response = event.get("response")
        if isinstance(response, Mapping):
            final = response
            reply.model = _str(response.get("model")) or reply.model
    for item in done or _list(final.get("output")):  # the items as they finished, else the end's
        _responses_item(reply, item)
    return reply


def _responses_item(reply: _Reply, item: Any) -> None:
    if not isinstance(item, Mapping):
        return
    kind = item.get("type")
    if kind == "message":
        reply.text += [str(c.get("text") or "") for c in _list(item.get("content"))]
    elif kind == "reasoning":
        reply.reasoning += [str(s.get("text") or "") for s in _list(item.get("summary"))]
    elif kind == "function_call":
        arguments = _arguments(item.get("arguments"))
        reply.calls.append((str(item.get("call_id") or ""), str(item.get("name")), arguments))
    elif kind == "custom_tool_call":
        arguments = {"input": str(item.get("input") or "")}
        reply.calls.append((str(item.get("call_id") or ""), str(item.get("name")), arguments))


# Messages -------------------------------------------------------------------------------------


def _messages_body(body: Mapping[str, Any]) -> _Reply:
    reply = _Reply(model=_str(body.get("model")))
    for block in _list(body.get("content")):
        _messages_block(reply, block, None)
    return reply


def _messages_stream(events: list[Mapping[str, Any]]) -> _Reply:
    """Blocks assembled from their start and deltas, by index."""
    reply = _Reply()
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    for event in events:
        kind, index = event.get("type"), _int(event.get("index"))
        message = event.get("message")
        if kind == "message_start" and isinstance(message, Mapping):
            reply.model = _str(message.get("model"))
        elif kind == "content_block_start" and index is not None:
            blocks[index] = dict(_map(event.get("content_block")))
        elif kind == "content_block_delta" and index is not None and index in blocks:
            delta, block = _map(event.get("delta")), blocks[index]
            for key in ("text", "thinking"):
                if delta.get("type") == f"{key}_delta":
                    block[key] = str(block.get(key) or "") + str(delta.get(key) or "")
            if delta.get("type") == "input_json_delta":
                partial.setdefault(index, []).append(str(delta.get("partial_json") or ""))
    for index in sorted(blocks):
        _messages_block(reply, blocks[index], "".join(partial[index]) if index in partial else None)
    return reply


def _messages_block(reply: _Reply, block: Any, partial_json: str | None) -> None:
    if not isinstance(block, Mapping):
        return
    kind = block.get("type")
    if kind == "text":
        reply.text.append(str(block.get("text") or ""))
    elif kind == "thinking":
        reply.reasoning.append(str(block.get("thinking") or ""))
    elif kind == "tool_use":
        arguments = _arguments(partial_json) if partial_json else dict(_map(block.get("input")))
        reply.calls.append((str(block.get("id") or ""), str(block.get("name")), arguments))


# Chat Completions -----------------------------------------------------------------------------


def _chat_body(body: Mapping[str, Any]) -> _Reply:
    reply = _Reply(model=_str(body.get("model")))
    choices = _list(body.get("choices"))
    message = _map(_map(choices[0]).get("message")) if choices else {}
    reply.text.append(str(message.get("content") or ""))
    reply.reasoning.append(str(message.get("reasoning_content") or ""))
    for call in _list(message.get("tool_calls")):
        function = _map(_map(call).get("function"))
        arguments = _arguments(function.get("arguments"))
        reply.calls.append((str(_map(call).get("id") or ""), str(function.get("name")), arguments))
    return reply


def _chat_stream(events: list[Mapping[str, Any]]) -> _Reply:
    """Text and reasoning deltas joined; tool calls assembled by their index."""
    reply = _Reply()
    calls: dict[int, dict[str, str]] = {}
    for event in events:
        reply.model = _str(event.get("model")) or reply.model
        for choice in _list(event.get("choices")):
            delta = _map(_map(choice).get("delta"))
            reply.text.append(str(delta.get("content") or ""))
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            reply.reasoning.append(reasoning if isinstance(reasoning, str) else "")
            for part in _list(delta.get("tool_calls")):
                part, function = _map(part), _map(_map(part).get("function"))
                call = calls.setdefault(
                    _int(part.get("index")) or 0, {"id": "", "name": "", "a": ""}
                )
                call["id"] = str(part.get("id") or call["id"])
                call["name"] = str(function.get("name") or call["name"])
                call["a"] += str(function.get("arguments") or "")
    reply.reasoning = ["".join(reply.reasoning)]
    for index in sorted(calls):
        call = calls[index]
        reply.calls.append((call["id"], call["name"], _arguments(call["a"])))
    return reply


_BODIES = {RESPONSES: _responses_body, MESSAGES: _messages_body, CHAT: _chat_body}
_STREAMS = {RESPONSES: _responses_stream, MESSAGES: _messages_stream, CHAT: _chat_stream}


# Tool results, from the next request ----------------------------------------------------------


def _results(protocol: str, request: Any) -> Iterator[tuple[str, str]]:
    """(call id, result text) of every tool result the request hands back to the model."""
    body = _map(request)
    if protocol == RESPONSES:
        for item in _list(body.get("input")):
            item = _map(item)
            if item.get("type") in ("function_call_output", "custom_tool_call_output"):
                yield str(item.get("call_id") or ""), _text(item.get("output"))
    elif protocol == MESSAGES:
        for message in _list(body.get("messages")):
            if _map(message).get("role") != "user":
                continue
            for block in _list(_map(message).get("content")):
                block = _map(block)
                if block.get("type") == "tool_result":
                    yield str(block.get("tool_use_id") or ""), _text(block.get("content"))
    else:
        for message in _list(body.get("messages")):
            message = _map(message)
            if message.get("role") == "tool":
                yield str(message.get("tool_call_id") or ""), _text(message.get("content"))


def _text(content: Any) -> str:
    """A result's text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    parts = [_map(part).get("text") for part in _list(content)]
    return "\n".join(part for part in parts if isinstance(part, str))


# Shapes ---------------------------------------------------------------------------------------


def _arguments(raw: Any) -> dict[str, Any]:
    """A call's arguments from their JSON text; text that is no JSON object is kept as input."""
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw else {}
    except json.JSONDecodeError:
        value = None
    return dict(value) if isinstance(value, Mapping) else {"input": raw}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
