"""The wire as steps: a scripted conversation of tool calls, sent through the real meter the way
a client would (each request handing back the last one's results), read back from the meter's
bodies file into one step per model request; and the join of a CLI's events with the wire."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_meter_proxy import post

from pytest_agentbench.meter.client import MeterProcess
from pytest_agentbench.testing.model_server import ScriptedModelServer
from pytest_agentbench.trajectory.join import join
from pytest_agentbench.trajectory.model import KINDS, Step, ToolCall
from pytest_agentbench.trajectory.wire import steps

FIRST = {"input": 1000, "cached_input": 0, "output": 30, "reasoning": 10}
SECOND = {"input": 1500, "cached_input": 1000, "output": 60, "reasoning": 0}
LAST = {"input": 1700, "cached_input": 1500, "output": 20, "reasoning": 5}
SCRIPT = {
    "turns": [
        {"calls": [{"shell": "ls"}], "usage": FIRST},
        {"calls": [{"shell": "cat a.txt"}, {"write": "b.txt", "content": "x\n"}], "usage": SECOND},
        {"message": "All done.", "usage": LAST},
    ]
}
PATCH = "*** Begin Patch\n*** Add File: b.txt\n+x\n*** End Patch\n"
# The calls each protocol's client is served, request by request (the file-tool clients read
# before they write, so the server answers a write with a read first).
EXPECTED = {
    "responses": [
        [("exec_command", {"cmd": "ls"})],
        [("exec_command", {"cmd": "cat a.txt"}), ("apply_patch", {"input": PATCH})],
        [],
    ],
    "messages": [
        [("Bash", {"command": "ls", "description": "Run"})],
        [("Read", {"file_path": "b.txt"})],
        [
            ("Bash", {"command": "cat a.txt", "description": "Run"}),
            ("Write", {"file_path": "b.txt", "content": "x\n"}),
        ],
        [],
    ],
    "chat": [
        [("bash", {"command": "ls", "description": "Run"})],
        [("read", {"filePath": "b.txt"})],
        [
            ("bash", {"command": "cat a.txt", "description": "Run"}),
            ("write", {"filePath": "b.txt", "content": "x\n"}),
        ],
        [],
    ],
}
TOOLS: dict[str, Any] = {
    "responses": [
        {"type": "function", "name": "exec_command"},
        {"type": "custom", "name": "apply_patch"},
    ],
    "messages": [{"name": n} for n in ("Bash", "Read", "Write", "Edit")],
    "chat": [{"type": "function", "function": {"name": n}} for n in ("bash", "read", "write")],
}
TAIL = {"responses": "/v1/responses", "messages": "/v1/messages", "chat": "/v1/chat/completions"}


@pytest.fixture(scope="module")
def meter() -> Iterator[MeterProcess]:
    process = MeterProcess(max_seconds=300)
    yield process
    process.stop()


def data_lines(stream: bytes) -> list[dict[str, Any]]:
    """The JSON events of a stream, as a plain client reads them."""
    found = []
    for line in stream.decode().splitlines():
        if line.startswith("data: {"):
            found.append(json.loads(line[6:]))
    return found


def hand_back(protocol: str, history: list[Any], stream: bytes) -> None:
    """Append the response's calls and their results to the conversation, as a client does."""
    events = data_lines(stream)
    if protocol == "responses":
        for event in events:
            item = event.get("item") or {}
            if item.get("type") in ("function_call", "custom_tool_call"):
                history.append(item)
                kind = f"{item['type']}_output"
                history.append(
                    {"type": kind, "call_id": item["call_id"], "output": f"out {item['call_id']}"}
                )
    elif protocol == "messages":
        uses = [e["content_block"] for e in events if e.get("type") == "content_block_start"]
        uses = [u for u in uses if u["type"] == "tool_use"]
        if uses:
            history.append({"role": "assistant", "content": uses})
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": u["id"],
                    "content": [{"type": "text", "text": f"out {u['id']}"}],
                }
                for u in uses
            ]
            history.append({"role": "user", "content": results})
    else:
        for event in events:
            for choice in event.get("choices") or []:
                for call in choice["delta"].get("tool_calls") or []:
                    history.append(
                        {"role": "tool", "tool_call_id": call["id"], "content": f"out {call['id']}"}
                    )


@pytest.mark.parametrize("protocol", ["responses", "messages", "chat"])
def test_wire_steps_are_the_scripted_calls_with_their_tokens_and_results(
    meter: MeterProcess, tmp_path: Path, protocol: str
) -> None:
    bodies = tmp_path / "wire.jsonl"
    with ScriptedModelServer(SCRIPT) as server:
        token, base = meter.open_trial(server.base_url, faults="2:429", bodies=bodies)
        history: list[Any] = []
        post(base, TAIL[protocol], {"stream": True, "messages": []})  # a title: no tools
        for _ in range(len(EXPECTED[protocol]) + 1):  # one more: the injected 429's retry
            key = "input" if protocol == "responses" else "messages"
            body = {"stream": True, "tools": TOOLS[protocol], key: list(history)}
            status, stream, _ = post(base, TAIL[protocol], body)
            if status == 200:
                hand_back(protocol, history, stream)
        meter.close_trial(token)
        served = [r.usage for r in server.requests]
    found = steps([json.loads(line) for line in bodies.read_text().splitlines()])
    side, refused, *turns = found
    assert side.side and side.tool_calls == [] and side.tokens is not None
    assert (refused.source, refused.message) == ("system", "model request 2: http 429 (injected)")
    calls = [[(c.name, c.arguments) for c in step.tool_calls] for step in turns]
    assert calls == EXPECTED[protocol]
    assert [s.request for s in found] == list(range(1, len(found) + 1))
    for step, usage in zip([side, *turns], served, strict=True):
        assert usage is not None
        wanted = {k: usage[k] for k in ("input", "cached_input", "output", "reasoning")}
        if protocol == "messages":
            wanted["reasoning"] = None  # Anthropic does not report it
        assert step.tokens == wanted
        assert step.tokens_from == "wire" and step.model == "scripted-model"
        assert step.latency_s is not None and step.latency_s > 0
    results = [c.result for step in turns for c in step.tool_calls]
    assert results == [f"out {c.call_id}" for step in turns for c in step.tool_calls]
    assert turns[-1].message == "All done." and not turns[-1].side
    assert [c.kind for c in turns[0].tool_calls] == ["shell"]
    assert turns[0].tool_calls[0].command == "ls"


def record(index: int, protocol: str, response: Any, **fields: Any) -> dict[str, Any]:
    """A bodies line with a non-streamed JSON response."""
    return {
        "index": index,
        "protocol": protocol,
        "status": 200,
        "has_tools": True,
        "injected": None,
        "failure": None,
        "duration_s": 0.5,
        "usage": None,
        "request": fields.pop("request", {}),
        "response": json.dumps(response),
        **fields,
    }


def test_plain_bodies_and_reasoning_of_each_protocol() -> None:
    responses = {
        "model": "gpt-x",
        "output": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{bad"},
        ],
    }
    messages = {
        "model": "claude-x",
        "content": [
            {"type": "thinking", "thinking": "hmm"},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}},
        ],
    }
    chat = {
        "model": "m",
        "choices": [{"message": {"content": "ok", "tool_calls": [
            {"id": "k1", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
        ]}}],
    }  # fmt: skip
    (r,) = steps([record(1, "responses", responses)])
    assert (r.reasoning, r.model, r.tool_calls[0].arguments) == (
        "think",
        "gpt-x",
        {"input": "{bad"},
    )
    (m,) = steps([record(1, "messages", messages)])
    assert (m.reasoning, m.message, m.tool_calls[0].paths) == ("hmm", "Reading.", ["a"])
    (c,) = steps([record(1, "chat", chat)])
    assert (c.message, c.tool_calls[0].command, c.reasoning) == ("ok", "ls", None)


def test_failed_requests_are_system_steps_and_other_paths_no_steps() -> None:
    found = steps(
        [
            record(4, "chat", {}, status=500),
            record(3, "chat", {}, status=200, failure="connection_reset"),
            record(2, None, {}),
            record(1, "chat", {}, status=200, injected="drop"),
            record(5, "chat", {}, status=None),
        ]
    )
    assert [s.message for s in found] == [
        "model request 1: drop (injected)",
        "model request 3: connection_reset",
        "model request 4: http 500",
        "model request 5: no answer",
    ]
    assert {s.source for s in found} == {"system"}


# join -----------------------------------------------------------------------------------------


def call(call_id: str, name: str, kind: Any, **fields: Any) -> ToolCall:
    return ToolCall(call_id, name, kind, **fields)


def test_join_takes_the_wires_structure_and_the_events_facts() -> None:
    wire = [
        Step("agent", tool_calls=[call("w1", "exec_command", "shell", result="wire out")],
             tokens={"input": 10}, latency_s=1.0, request=1),
        Step("system", message="model request 2: http 429 (injected)", request=2),
        Step("agent", tool_calls=[call("w2", "apply_patch", "edit")], request=3),
        Step("agent", message="Done.", request=4),
    ]  # fmt: skip
    events = [
        Step("agent", reasoning="plan", timestamp="t1",
             tool_calls=[call("e1", "command_execution", "shell", result="cli out", exit_code=0,
                              duration_s=0.2)]),
        Step("system", message="cli: retrying"),
        Step("agent", tool_calls=[call("e2", "file_change", "edit", result="patched")]),
        Step("agent", message="Done.", timestamp="t9"),
    ]  # fmt: skip
    joined, notes = join(events, wire)
    assert notes == []
    assert [s.request for s in joined] == [1, None, 2, 3, 4]
    assert joined[1].message == "cli: retrying"
    first, edit = joined[0].tool_calls[0], joined[3].tool_calls[0]
    assert (first.call_id, first.result, first.exit_code, first.duration_s) == (
        "w1",
        "wire out",
        0,
        0.2,
    )
    assert (edit.call_id, edit.result) == ("w2", "patched")
    assert (joined[0].reasoning, joined[0].timestamp, joined[0].tokens) == (
        "plan",
        "t1",
        {"input": 10},
    )
    assert joined[4].timestamp == "t9"
    assert wire[2].tool_calls[0].result is None  # the inputs are left as they were


def test_join_keeps_the_wires_calls_and_says_what_disagreed() -> None:
    wire = [Step("agent", tool_calls=[call("a", "bash", "shell"), call("b", "read", "read")])]
    events = [Step("agent", tool_calls=[call("x", "Bash", "shell", result="r")])]
    joined, notes = join(events, wire)
    assert [c.call_id for c in joined[0].tool_calls] == ["a", "b"]
    assert joined[0].tool_calls[0].result == "r"
    assert notes == ["events: 1 tool calls, wire: 2"]
    events = [Step("agent", tool_calls=[call("x", "Bash", "shell"), call("y", "grep", "search")])]
    assert join(events, wire)[1] == [
        "tool call kinds disagree: events shell, search; wire shell, read"
    ]


def test_join_matches_shared_call_ids_first() -> None:
    wire = [Step("agent", tool_calls=[call("t1", "Bash", "shell"), call("t2", "Bash", "shell")])]
    events = [Step("agent", tool_calls=[call("t2", "Bash", "shell", result="second")])]
    joined, _ = join(events, wire)
    assert [c.result for c in joined[0].tool_calls] == [None, "second"]


calls = st.builds(
    ToolCall,
    call_id=st.sampled_from(["a", "b", "c", ""]),
    name=st.sampled_from(["bash", "read", "Edit"]),
    kind=st.sampled_from(KINDS),
    result=st.none() | st.text(max_size=5),
)
step_lists = st.lists(
    st.builds(
        Step,
        source=st.sampled_from(["agent", "agent", "system", "user"]),
        tool_calls=st.lists(calls, max_size=3),
        reasoning=st.none() | st.just("r"),
        side=st.booleans(),
    ),
    max_size=5,
)


@settings(max_examples=200, deadline=None)
@given(events=step_lists, wire=step_lists)
def test_join_never_loses_a_wire_call(events: list[Step], wire: list[Step]) -> None:
    before = [(c.call_id, c.name, c.kind, c.arguments) for s in wire for c in s.tool_calls]
    joined, notes = join(events, wire)
    after = [(c.call_id, c.name, c.kind, c.arguments) for s in joined for c in s.tool_calls]
    assert after == before
    assert len(joined) >= len(wire)
    assert all(isinstance(note, str) for note in notes)
