"""Claude Code `stream-json` events as steps.

Claude Code streams one `assistant` event per content block of an API message, each carrying
the message's id and usage: blocks of one id make one step, one model request, with that
request's tokens. `user` events carry the tool results, matched to their calls by id. Claude
Code's own stand-in messages for an API error are system steps, not the model's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.trajectory.events import (
    appended,
    integer,
    mapping,
    result_text,
    text,
    tool_call,
)
from pytest_agentbench.trajectory.model import Step, ToolCall

SYNTHETIC_MODEL = "<synthetic>"


def message_tokens(usage: Mapping[str, Any]) -> dict[str, int | None] | None:
    """A message's prompt tokens in the project's meaning (input counts cache reads and
    writes). Its output stays unknown: stream-json repeats the usage of the stream's start,
    whose output count is a placeholder (1); the session's result has the true total."""
    uncached, reads = (integer(usage.get(k)) for k in ("input_tokens", "cache_read_input_tokens"))
    writes = integer(usage.get("cache_creation_input_tokens"))
    if uncached is None or reads is None:
        return None
    return {
        "input": uncached + reads + (writes or 0),
        "cached_input": reads,
        "output": None,
        "reasoning": None,
    }


def steps(events: Sequence[Mapping[str, Any]]) -> list[Step]:
    """One round's events as agent and system steps, in order."""
    found: list[Step] = []
    by_id: dict[str, Step] = {}
    calls: dict[str, ToolCall] = {}
    for event in events:
        kind = event.get("type")
        message = mapping(event.get("message"))
        if kind == "assistant":
            if event.get("is_api_error_message") or message.get("model") == SYNTHETIC_MODEL:
                found.append(Step("system", _texts(message.get("content")) or "API error"))
                continue
            key = str(message.get("id") or len(found))
            step = by_id.get(key)
            if step is None:
                step = by_id[key] = Step("agent", model=text(message.get("model")))
                found.append(step)
            step.tokens = message_tokens(mapping(message.get("usage"))) or step.tokens
            step.tokens_from = "reported" if step.tokens is not None else None
            for block in message.get("content") or []:
                _add_block(step, mapping(block), calls)
        elif kind == "user":
            for block in message.get("content") or []:
                block = mapping(block)
                call = calls.get(str(block.get("tool_use_id")))
                if block.get("type") == "tool_result" and call is not None:
                    call.result = result_text(block.get("content"))
                    if block.get("is_error"):
                        call.exit_code = call.exit_code if call.exit_code is not None else 1
        elif kind == "result" and event.get("is_error"):
            said = text(event.get("result")) or "error"
            if not (found and found[-1].source == "system" and found[-1].message == said):
                found.append(Step("system", said))  # not the synthetic message again
    return found


def _add_block(step: Step, block: Mapping[str, Any], calls: dict[str, ToolCall]) -> None:
    kind = block.get("type")
    if kind == "text" and text(block.get("text")):
        step.message = appended(step.message, str(block["text"]))
    elif kind == "thinking" and text(block.get("thinking")):
        step.reasoning = appended(step.reasoning, str(block["thinking"]))
    elif kind == "tool_use":
        call = tool_call(block.get("id"), block.get("name"), block.get("input"))
        calls[call.call_id] = call
        step.tool_calls.append(call)


def _texts(content: Any) -> str:
    return "\n".join(
        str(mapping(b).get("text")) for b in content or [] if text(mapping(b).get("text"))
    )
