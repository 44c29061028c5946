"""codex `exec --json` events as steps.

codex reports items (reasoning, messages, commands, file changes, tool calls) but not which
model request produced them, nor per-request tokens (only a turn's): each tool item or
message is a step of its own, a reasoning item goes with the step after it, and steps carry
no tokens. The wire, when metered, gives the requests (join).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.trajectory.events import arguments, integer, mapping, result_text, text
from pytest_agentbench.trajectory.kinds import command_line
from pytest_agentbench.trajectory.model import (
    MESSAGE_LIMIT,
    Kind,
    Step,
    ToolCall,
    bounded_text,
)

# Item types that are tool calls, with their kind.
TOOL_ITEMS: dict[str, Kind] = {
    "command_execution": "shell",
    "file_change": "edit",
    "mcp_tool_call": "other",
    "web_search": "search",
}


def item_call(item: Mapping[str, Any]) -> ToolCall:
    kind = TOOL_ITEMS[str(item.get("type"))]
    name = str(item.get("type"))
    call = ToolCall(str(item.get("id") or ""), name, kind)
    if kind == "shell":
        call.command = command_line(item.get("command"))
        call.arguments = {"command": item.get("command")}
        call.result = result_text(item.get("aggregated_output"))
        call.exit_code = integer(item.get("exit_code"))
    elif kind == "edit":
        changes = [mapping(c) for c in item.get("changes") or [] if isinstance(c, Mapping)]
        call.paths = [str(c["path"]) for c in changes if isinstance(c.get("path"), str)]
        call.arguments = {"changes": [dict(c) for c in changes]}
        call.result = text(item.get("status"))
    elif kind == "search":
        call.arguments = {"query": item.get("query")}
    else:
        call.name = text(item.get("tool")) or name
        call.arguments = arguments(item.get("arguments"))
        call.result = result_text(mapping(item.get("result")).get("content") or item.get("result"))
    return call


def steps(events: Sequence[Mapping[str, Any]]) -> list[Step]:
    """One round's events as agent and system steps, in order."""
    found: list[Step] = []
    reasoning: list[str] = []
    for event in events:
        kind = event.get("type")
        item = mapping(event.get("item"))
        if kind == "item.completed" and item.get("type") == "reasoning":
            reasoning.append(text(item.get("text")) or "")
            continue
        if kind == "item.completed" and item.get("type") in TOOL_ITEMS:
            step = Step("agent", tool_calls=[item_call(item)])
        elif kind == "item.completed" and item.get("type") == "agent_message":
            step = Step("agent", bounded_text(text(item.get("text")) or "", MESSAGE_LIMIT) or "")
        elif kind == "item.completed" and item.get("type") == "error":
            step = Step("system", text(item.get("message")) or "error")
        elif kind in ("turn.failed", "error"):
            message = text(mapping(event.get("error")).get("message")) or text(event.get("message"))
            step = Step("system", message or str(kind))
        else:
            continue
        repeated = found and found[-1].source == "system" and found[-1].message == step.message
        if step.source == "system" and repeated:
            continue  # turn.failed repeats the error event before it
        if step.source == "agent" and reasoning:
            step.reasoning = bounded_text("\n".join(reasoning), MESSAGE_LIMIT)
            reasoning = []
        found.append(step)
    return found
