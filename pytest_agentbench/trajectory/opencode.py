"""opencode `run --format json` events as steps.

A step_start ... step_finish span is one model request: its text and reasoning parts, the
tool parts it asked for (input, output, exit status and times as opencode records them) and
the step's tokens, which opencode reports per request (input without cache reads and writes,
output without reasoning: both added back here).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.trajectory.events import (
    appended,
    integer,
    iso_ms,
    mapping,
    result_text,
    text,
    tool_call,
)
from pytest_agentbench.trajectory.model import Step


def step_tokens(tokens: Mapping[str, Any]) -> dict[str, int | None] | None:
    if not tokens:
        return None
    cache = mapping(tokens.get("cache"))
    uncached, reads, writes = (
        integer(tokens.get("input")),
        integer(cache.get("read")),
        integer(cache.get("write")),
    )
    output, reasoning = integer(tokens.get("output")), integer(tokens.get("reasoning"))
    known = None not in (uncached, reads, writes)
    return {
        "input": (uncached or 0) + (reads or 0) + (writes or 0) if known else None,
        "cached_input": reads,
        "output": None if output is None or reasoning is None else output + reasoning,
        "reasoning": reasoning,
    }


def steps(events: Sequence[Mapping[str, Any]]) -> list[Step]:
    """One round's events as agent and system steps, in order."""
    found: list[Step] = []
    current: Step | None = None
    for event in events:
        kind = event.get("type")
        part = mapping(event.get("part"))
        if kind == "error":
            error = mapping(event.get("error"))
            message = text(mapping(error.get("data")).get("message")) or text(error.get("name"))
            found.append(
                Step("system", message or "error", timestamp=iso_ms(event.get("timestamp")))
            )
            continue
        if kind == "step_start" or current is None:
            current = Step("agent", timestamp=iso_ms(event.get("timestamp")))
            found.append(current)
            if kind == "step_start":
                continue
        if kind == "text" and text(part.get("text")):
            current.message = appended(current.message, str(part["text"]))
        elif kind == "reasoning" and text(part.get("text")):
            current.reasoning = appended(current.reasoning, str(part["text"]))
        elif kind == "tool_use":
            state = mapping(part.get("state"))
            call = tool_call(part.get("callID"), part.get("tool"), state.get("input"))
            call.result = result_text(state.get("output") or text(state.get("error")))
            call.exit_code = integer(mapping(state.get("metadata")).get("exit"))
            times = mapping(state.get("time"))
            start, end = integer(times.get("start")), integer(times.get("end"))
            if start is not None and end is not None and end >= start:
                call.duration_s = (end - start) / 1000
            current.tool_calls.append(call)
        elif kind == "step_finish":
            current.tokens = step_tokens(mapping(part.get("tokens")))
            current.tokens_from = "reported" if current.tokens is not None else None
            current = None
    return found
