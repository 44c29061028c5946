"""Helpers the per-CLI event parsers share: safe field access over events of any shape."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pytest_agentbench.trajectory.kinds import classify
from pytest_agentbench.trajectory.model import MESSAGE_LIMIT, RESULT_LIMIT, ToolCall, bounded_text


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def appended(before: str | None, more: str) -> str:
    """A step's text with one more part on a line of its own, bounded as messages are."""
    joined = "\n".join(part for part in (before, more) if part)
    return bounded_text(joined, MESSAGE_LIMIT) or ""


def arguments(value: Any) -> dict[str, Any]:
    """A call's arguments as an object: a JSON text decoded, anything else wrapped."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {"input": value}
    if isinstance(value, Mapping):
        return dict(value)
    return {} if value is None else {"input": value}


def result_text(value: Any) -> str | None:
    """A tool result as text: a string, or the text blocks of a content list."""
    if isinstance(value, str):
        return bounded_text(value, RESULT_LIMIT)
    if isinstance(value, list):
        parts = [text(mapping(block).get("text")) for block in value]
        joined = "\n".join(p for p in parts if p)
        return bounded_text(joined, RESULT_LIMIT)
    return None


def tool_call(call_id: Any, name: Any, args: Any) -> ToolCall:
    """A ToolCall with its kind, paths and command line worked out from its name."""
    given = arguments(args)
    shown = text(name) or "unknown"
    kind, paths, command = classify(shown, given)
    return ToolCall(str(call_id or ""), shown, kind, given, paths=paths, command=command)


def iso_ms(value: Any) -> str | None:
    """An ISO 8601 time from epoch milliseconds."""
    ms = integer(value)
    if ms is None:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None
