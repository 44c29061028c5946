"""A metered round's trajectory from both of its sources: the wire and the CLI's own events.

The wire is the ground truth of what the model was asked and answered: it decides the steps
(one agent step per model request), their tool calls, tokens and latencies. The events add
what only the CLI knows: how a tool call ran (its exit code and duration, its result when the
wire never carried it back, as for a round's last call), reasoning the wire did not show,
timestamps, and the CLI's own system steps. Tool calls are matched by call id where both
sides share it (Claude's do), else in order by kind, since CLIs name their events' tools
apart from the model's (codex's command_execution is the wire's exec_command).
"""

from __future__ import annotations

import copy
from dataclasses import replace

from pytest_agentbench.trajectory.model import (
    MESSAGE_LIMIT,
    RESULT_LIMIT,
    Step,
    ToolCall,
    bounded_text,
)


def join(events: list[Step], wire: list[Step]) -> tuple[list[Step], list[str]]:
    """The joined steps (the inputs are left as they were), and notes on what disagreed."""
    joined = copy.deepcopy(wire)
    spoken = [step for step in events if step.source == "agent"]
    wire_calls = [(i, call) for i, step in enumerate(joined) for call in step.tool_calls]
    event_calls = [(j, call) for j, step in enumerate(spoken) for call in step.tool_calls]
    pairs = _match([c for _, c in event_calls], [c for _, c in wire_calls])
    targets: dict[int, int] = {}  # event agent step -> the wire step it speaks of
    for e, w in sorted(pairs.items()):
        _fill_call(wire_calls[w][1], event_calls[e][1])
        targets.setdefault(event_calls[e][0], wire_calls[w][0])
    _place_callless(spoken, joined, targets)
    for j, i in targets.items():
        _fill_step(joined[i], spoken[j])
    notes = _notes([c for _, c in event_calls], [c for _, c in wire_calls], len(pairs))
    return _with_system_steps(events, joined, targets), notes


def _match(events: list[ToolCall], wire: list[ToolCall]) -> dict[int, int]:
    """Event call -> wire call: a shared call id first; the others in order, to the next free
    wire call of the same kind, and of the same name where the CLI uses the model's names."""
    by_id: dict[str, int] = {}
    for k, call in enumerate(wire):
        by_id.setdefault(call.call_id, k)
    pairs: dict[int, int] = {}
    taken: set[int] = set()
    for e, call in enumerate(events):
        shared = by_id.get(call.call_id) if call.call_id else None
        if shared is not None and shared not in taken:
            pairs[e] = shared
            taken.add(shared)
    wire_names = {call.name for call in wire}
    cursor = 0
    for e, call in enumerate(events):
        if e in pairs:
            cursor = max(cursor, pairs[e] + 1)
            continue
        for k in range(cursor, len(wire)):
            same_name = call.name not in wire_names or wire[k].name == call.name
            if k not in taken and wire[k].kind == call.kind and same_name:
                pairs[e], cursor = k, k + 1
                taken.add(k)
                break
    return pairs


def _fill_call(wire: ToolCall, event: ToolCall) -> None:
    if wire.result is None:
        wire.result = bounded_text(event.result, RESULT_LIMIT)
    wire.exit_code = wire.exit_code if wire.exit_code is not None else event.exit_code
    wire.duration_s = wire.duration_s if wire.duration_s is not None else event.duration_s
    wire.paths = wire.paths or list(event.paths)
    wire.command = wire.command or event.command


def _place_callless(spoken: list[Step], joined: list[Step], targets: dict[int, int]) -> None:
    """An event step whose calls matched nothing (a final message) speaks of the first wire
    step without calls between the wire steps its neighbours speak of, if there is one."""
    used: set[int] = set()
    for j in range(len(spoken)):
        if j in targets:
            continue
        before = max((targets[k] for k in targets if k < j), default=-1)
        after = min((targets[k] for k in targets if k > j), default=len(joined))
        for i in range(before + 1, after):
            step = joined[i]
            if step.source == "agent" and not step.side and not step.tool_calls and i not in used:
                targets[j] = i
                used.add(i)
                break


def _fill_step(wire: Step, event: Step) -> None:
    wire.reasoning = wire.reasoning or bounded_text(event.reasoning, MESSAGE_LIMIT)
    wire.timestamp = wire.timestamp or event.timestamp
    wire.message = wire.message or bounded_text(event.message, MESSAGE_LIMIT) or ""


def _with_system_steps(
    events: list[Step], joined: list[Step], targets: dict[int, int]
) -> list[Step]:
    """The wire's steps with the events' own user and system steps (never a tool call) after
    the wire step the event before them speaks of."""
    after: dict[int, list[Step]] = {}
    anchor, j = -1, 0
    for step in events:
        if step.source == "agent":
            anchor = targets.get(j, anchor)
            j += 1
        else:
            after.setdefault(anchor, []).append(replace(copy.deepcopy(step), tool_calls=[]))
    ordered = list(after.get(-1, []))
    for i, step in enumerate(joined):
        ordered += [step, *after.get(i, [])]
    return ordered


def _notes(events: list[ToolCall], wire: list[ToolCall], matched: int) -> list[str]:
    if len(events) != len(wire):
        return [f"events: {len(events)} tool calls, wire: {len(wire)}"]
    if matched < len(events):
        kinds = [", ".join(c.kind for c in calls) for calls in (events, wire)]
        return [f"tool call kinds disagree: events {kinds[0]}; wire {kinds[1]}"]
    return []
