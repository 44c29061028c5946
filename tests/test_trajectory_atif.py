"""The ATIF export: valid against a schema written from Harbor's RFC, and read back whole."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.trajectory.atif import SCHEMA_VERSION, from_atif, to_atif
from pytest_agentbench.trajectory.model import KINDS, Step, ToolCall, Trajectory

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA = json.loads((FIXTURES / "atif-v1.4.schema.json").read_text(encoding="utf-8"))
EXAMPLE = json.loads((FIXTURES / "atif-v1.4-example.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def errors(document: Any) -> list[str]:
    return [error.message for error in VALIDATOR.iter_errors(document)]


def sample() -> Trajectory:
    edit = ToolCall(
        "c1", "apply_patch", "edit", {"patch": "..."}, "ok", 0, 0.25, ["<workspace>/a.py"]
    )
    shell = ToolCall(
        "c2", "bash", "shell", {"command": "pytest -q"}, "1 passed", 0, 1.5, [], "pytest -q"
    )
    unseen = ToolCall("c3", "read", "read", {"path": "b.py"}, paths=["b.py"])
    return Trajectory(
        agent="codex",
        origin="events+wire",
        agent_version="0.46.0",
        model="gpt-5",
        session_id="s-1",
        notes=["wire request 3 had no matching event"],
        steps=[
            Step("user", "Fix a.py", timestamp="2026-01-02T03:04:05Z"),
            Step(
                "agent",
                "Patching.",
                reasoning="a.py has the bug",
                tool_calls=[edit, shell, unseen],
                tokens={"input": 1200, "cached_input": 1000, "output": 80, "reasoning": 30},
                tokens_from="wire",
                latency_s=2.5,
                model="gpt-5",
                request=0,
            ),
            Step("agent", "Done.", tokens={"input": 1400, "cached_input": None, "output": 5}),
            Step("system", "round 1 feedback", round=1),
        ],
    )


def test_the_rfc_example_validates() -> None:
    assert errors(EXAMPLE) == []


def test_a_hand_built_trajectory_exports_valid_atif() -> None:
    document = to_atif(sample(), trial={"trial_id": "t-7", "outcome": "exact"})
    assert errors(document) == []
    assert document["schema_version"] == SCHEMA_VERSION == "ATIF-v1.4"
    assert document["session_id"] == "s-1"
    assert document["agent"] == {"name": "codex", "version": "0.46.0", "model_name": "gpt-5"}
    assert [step["step_id"] for step in document["steps"]] == [1, 2, 3, 4]
    assert document["extra"] == {
        "origin": "events+wire",
        "trial": {"trial_id": "t-7", "outcome": "exact"},
    }
    assert document["notes"] == "wire request 3 had no matching event"
    agent = document["steps"][1]
    assert agent["observation"] == {
        "results": [
            {"source_call_id": "c1", "content": "ok"},
            {"source_call_id": "c2", "content": "1 passed"},
        ]
    }
    assert agent["metrics"] == {
        "prompt_tokens": 1200,
        "completion_tokens": 80,
        "cached_tokens": 1000,
        "extra": {"reasoning_tokens": 30, "tokens_from": "wire", "latency_s": 2.5},
    }
    assert agent["extra"]["tool_calls"][1] == {
        "tool_call_id": "c2",
        "kind": "shell",
        "paths": [],
        "exit_code": 0,
        "duration_s": 1.5,
        "command": "pytest -q",
    }
    # Unknown counts are left out, never written as 0, and no total pretends to be whole.
    assert document["steps"][2]["metrics"] == {"prompt_tokens": 1400, "completion_tokens": 5}
    assert document["final_metrics"] == {
        "total_prompt_tokens": 2600,
        "total_completion_tokens": 85,
        "total_steps": 4,
    }


def test_without_a_session_or_version_the_export_still_names_both() -> None:
    trajectory = Trajectory(agent="mock", origin="simulated", steps=[Step("user", "go")])
    document = to_atif(trajectory, trial={"trial_id": "run-1/t::a[0]"})
    assert errors(document) == []
    assert document["session_id"] == "run-1/t::a[0]"
    assert document["agent"] == {"name": "mock", "version": "unknown"}
    assert document["extra"] == {"origin": "simulated", "trial": {"trial_id": "run-1/t::a[0]"}}
    assert "total_prompt_tokens" not in document["final_metrics"]
    # Without a trial id the session is a hash: the same trial, the same id.
    first = to_atif(trajectory, trial={"task": "t"})["session_id"]
    assert first == to_atif(trajectory, trial={"task": "t"})["session_id"] != "run-1/t::a[0]"
    assert first != to_atif(trajectory, trial={"task": "u"})["session_id"]


def broken(path: tuple[str | int, ...], value: Any = None, *, drop: bool = False) -> Any:
    document = copy.deepcopy(EXAMPLE)
    target = document
    for key in path[:-1]:
        target = target[key]
    if drop:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return document


@pytest.mark.parametrize(
    "document",
    [
        broken(("sesion_id",), "x"),
        broken(("agent", "model"), "m"),
        broken(("steps", 1, "tool_calls", 0, "function"), "f"),
        broken(("steps", 1, "observation", "results", 0, "output"), "x"),
        broken(("steps", 1, "metrics", "input_tokens"), 3),
        broken(("final_metrics", "total_tokens"), 3),
        broken(("steps", 0, "step"), 1),
    ],
    ids=["root", "agent", "tool-call", "result", "metrics", "final-metrics", "step"],
)
def test_the_schema_refuses_a_misspelt_field(document: Any) -> None:
    assert any("Additional properties" in message for message in errors(document))


@pytest.mark.parametrize(
    "document",
    [
        broken(("steps", 0, "source"), "human"),
        broken(("steps", 0, "step_id"), 0),
        broken(("steps", 0, "step_id"), "1"),
        broken(("session_id",), drop=True),
        broken(("agent", "version"), drop=True),
        broken(("steps", 1, "message"), drop=True),
        broken(("steps", 1, "tool_calls", 0, "arguments"), drop=True),
        broken(("steps", 1, "tool_calls", 0, "arguments"), "ticker=GOOGL"),
        broken(("steps", 1, "observation", "results"), drop=True),
        broken(("steps", 0, "metrics"), {"prompt_tokens": 3}),
    ],
    ids=[
        "bad-source",
        "step-id-0",
        "step-id-str",
        "no-session",
        "no-version",
        "no-message",
        "no-arguments",
        "string-arguments",
        "no-results",
        "user-metrics",
    ],
)
def test_the_schema_refuses_bad_or_missing_values(document: Any) -> None:
    assert errors(document)


def test_our_own_file_reads_back_whole() -> None:
    trajectory = sample()
    back = from_atif(json.loads(json.dumps(to_atif(trajectory))))
    assert back.agent_steps[1].tokens == {
        "input": 1400,
        "cached_input": None,
        "output": 5,
        "reasoning": None,
    }
    back.agent_steps[1].tokens = trajectory.agent_steps[1].tokens
    assert back == trajectory


def test_a_foreign_file_reads_as_far_as_it_goes() -> None:
    back = from_atif(EXAMPLE)
    assert (back.agent, back.agent_version, back.model) == (
        "harbor-agent",
        "1.0.0",
        "gemini-2.5-flash",
    )
    assert back.origin == "file"
    assert [step.source for step in back.steps] == ["user", "agent", "agent"]
    calls = back.tool_calls()
    assert [(c.call_id, c.kind, c.result) for c in calls] == [
        ("call_price_1", "other", "GOOGL is currently trading at $185.35 (Close: 10/11/2025)"),
        ("call_volume_2", "other", "GOOGL volume: 1.5M shares traded."),
    ]
    assert back.steps[2].tokens == {
        "input": 600,
        "cached_input": None,
        "output": 44,
        "reasoning": 12,
    }
    # A shell call named by a foreign writer is classified from its name and arguments.
    shell = from_atif(
        {
            "steps": [
                {
                    "source": "agent",
                    "message": [{"type": "text", "text": "running"}],
                    "tool_calls": [
                        {
                            "tool_call_id": "x",
                            "function_name": "bash",
                            "arguments": '{"command": "ls"}',
                        }
                    ],
                },
                "not a step",
            ]
        }
    )
    assert shell.steps[0].message == "running"
    assert shell.notes == []
    assert [(c.kind, c.command, c.arguments) for c in shell.tool_calls()] == [
        ("shell", "ls", {"command": "ls"})
    ]


names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
counts = st.none() | st.integers(min_value=0, max_value=10**7)
calls = st.builds(
    ToolCall,
    call_id=names,
    name=names,
    kind=st.sampled_from(KINDS),
    arguments=st.dictionaries(names, st.integers() | names, max_size=3),
    result=st.none() | names,
    exit_code=st.none() | st.integers(-1, 255),
    duration_s=st.none() | st.floats(0, 1e4),
    paths=st.lists(names, max_size=3),
    command=st.none() | names,
)


@st.composite
def steps(draw: st.DrawFn) -> Step:
    source = draw(st.sampled_from(("user", "agent", "system")))
    agent = source == "agent"
    tokens = draw(
        st.none()
        | st.fixed_dictionaries(
            {"input": counts, "cached_input": counts, "output": counts, "reasoning": counts}
        ).filter(lambda t: any(v is not None for v in t.values()))
    )
    return Step(
        source=source,
        message=draw(names),
        timestamp=draw(st.none() | st.just("2026-01-02T03:04:05Z")),
        reasoning=draw(st.none() | names) if agent else None,
        tool_calls=draw(st.lists(calls, max_size=3, unique_by=lambda c: c.call_id))
        if agent
        else [],
        tokens=tokens if agent else None,
        tokens_from=draw(st.none() | st.sampled_from(("wire", "reported"))) if agent else None,
        latency_s=draw(st.none() | st.floats(0, 1e3)) if agent else None,
        model=draw(st.none() | names.filter(bool)) if agent else None,
        request=draw(st.none() | st.integers(0, 50)),
        side=draw(st.booleans()),
        attempt=draw(st.integers(0, 3)),
        round=draw(st.integers(0, 3)),
    )


trajectories = st.builds(
    Trajectory,
    agent=names,
    origin=st.sampled_from(("events", "wire", "events+wire", "simulated", "stdout", "file")),
    steps=st.lists(steps(), max_size=5),
    agent_version=st.none() | names.filter(lambda v: v not in ("", "unknown")),
    model=st.none() | names.filter(bool),
    session_id=st.none() | names.filter(bool),
    notes=st.lists(names.filter(lambda n: n and n.splitlines() == [n]), max_size=2),
)


@given(trajectories, st.none() | st.dictionaries(names, st.integers(), max_size=2))
def test_every_trajectory_exports_valid_atif_and_reads_back(
    trajectory: Trajectory, trial: dict[str, int] | None
) -> None:
    document = json.loads(json.dumps(to_atif(trajectory, trial=trial)))
    assert errors(document) == []
    back = from_atif(document)
    assert [step.tool_calls for step in back.steps] == [
        step.tool_calls for step in trajectory.steps
    ]
    assert [_tokens(step) for step in back.steps] == [_tokens(step) for step in trajectory.steps]
    assert [step.message for step in back.steps] == [step.message for step in trajectory.steps]
    assert back.notes == trajectory.notes
    assert (back.agent_version, back.model) == (trajectory.agent_version, trajectory.model)
    if trajectory.session_id is not None:
        assert back.session_id == trajectory.session_id


def _tokens(step: Step) -> dict[str, int | None] | None:
    return dict(step.tokens) if step.tokens else None


def test_a_result_of_no_tool_call_is_noted_as_left_out() -> None:
    document = broken(("steps", 0, "observation"), {"results": [{"content": "reset"}]})
    document["steps"][0]["source"] = "system"
    assert errors(document) == []
    back = from_atif(document)
    assert back.notes[-1] == "observation results of no tool call left out (steps 1)"
    assert len(from_atif(EXAMPLE).notes) == 1  # the example's own notes only
