"""The per-CLI parsers over real event streams of codex, Claude Code and opencode (recorded
against the scripted server: a shell call, a read where the CLI needs one, an edit, a final
message), and over arbitrary JSON, which they never fail on."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.trajectory.build import PARSERS, json_lines
from pytest_agentbench.trajectory.kinds import classify, command_line, patch_paths

EVENTS = Path(__file__).parent / "fixtures" / "events"
WORKSPACE_FILE = "/tmp/agentbench-trial/ws/a.txt"


def parsed(cli: str, name: str = "success"):
    return PARSERS[cli](json_lines((EVENTS / cli / f"{name}.jsonl").read_text()))


@pytest.mark.parametrize(
    ("cli", "calls"),
    [
        ("codex", [("command_execution", "shell"), ("file_change", "edit")]),
        ("claude", [("Bash", "shell"), ("Read", "read"), ("Edit", "edit")]),
        ("opencode", [("bash", "shell"), ("read", "read"), ("edit", "edit")]),
    ],
)
def test_the_tool_calls_in_order_with_kinds_commands_and_paths(cli, calls) -> None:
    steps = parsed(cli)
    made = [call for step in steps for call in step.tool_calls]
    assert [(c.name, c.kind) for c in made] == calls
    assert made[0].command == "printf 'made\\n' > made.txt"  # codex's bash -lc unwrapped
    assert all(c.paths == [WORKSPACE_FILE] for c in made[1:])
    assert [s.message for s in steps if s.source == "agent"][-1] == "All done."


def test_claude_code_gives_each_requests_prompt_tokens_and_the_results() -> None:
    steps = [s for s in parsed("claude") if s.source == "agent"]
    assert len(steps) == 4  # one per API message, the blocks of one message merged
    assert all(s.tokens == {"input": 1000, "cached_input": 800, "output": None, "reasoning": None}
               for s in steps)  # fmt: skip
    assert all(s.tokens_from == "reported" for s in steps)
    bash, read, edit = (s.tool_calls[0] for s in steps[:3])
    assert bash.result == "(Bash completed with no output)"
    assert read.result == "1\thello\n2\tworld\n3\t"
    assert edit.result is not None and edit.result.startswith("The file")


def test_opencode_gives_each_steps_tokens_exit_status_and_duration() -> None:
    steps = [s for s in parsed("opencode") if s.source == "agent"]
    assert len(steps) == 4
    # input 200 + cache read 800; output 40 + reasoning 10
    assert steps[0].tokens == {"input": 1000, "cached_input": 800, "output": 50, "reasoning": 10}
    bash = steps[0].tool_calls[0]
    assert bash.exit_code == 0 and bash.duration_s is not None and bash.result == "(no output)"
    assert steps[0].timestamp is not None and steps[0].timestamp.endswith("Z")


def test_codex_steps_carry_no_tokens_but_exit_statuses() -> None:
    steps = parsed("codex")
    assert all(s.tokens is None for s in steps)  # codex reports a turn's usage only
    shell = next(c for s in steps for c in s.tool_calls if c.kind == "shell")
    assert shell.exit_code == 0
    assert steps[0].source == "system"  # its own warning about the model, not the model's


@pytest.mark.parametrize("cli", ["codex", "claude", "opencode"])
@pytest.mark.parametrize("name", ["auth", "rate_limit", "server_error", "no_connection"])
def test_a_failed_round_shows_what_the_cli_said_and_no_made_up_calls(cli, name) -> None:
    steps = parsed(cli, name)
    assert not [c for s in steps for c in s.tool_calls]
    said = [s.message for s in steps if s.source == "system"]
    assert len(said) == len(set(said))  # an error the CLI repeats is shown once


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("exec_command", {"cmd": "ls -la"}, ("shell", [], "ls -la")),
        ("shell", {"command": ["bash", "-lc", "pytest -q"]}, ("shell", [], "pytest -q")),
        ("Write", {"file_path": "a.py", "content": "x"}, ("edit", ["a.py"], None)),
        ("Grep", {"pattern": "TODO"}, ("search", [], None)),
        ("TodoWrite", {"todos": []}, ("other", [], None)),
        (
            "apply_patch",
            {"input": "*** Begin Patch\n*** Update File: b.py\n@@\n-a\n+b\n*** End Patch\n"},
            ("edit", ["b.py"], None),
        ),
        (
            "exec_command",
            {"cmd": "apply_patch <<'P'\n*** Begin Patch\n*** Add File: c.py\n+x\n*** End Patch\nP"},
            (
                "edit",
                ["c.py"],
                "apply_patch <<'P'\n*** Begin Patch\n*** Add File: c.py\n+x\n*** End Patch\nP",
            ),
        ),
    ],
)
def test_classify(name, arguments, expected) -> None:
    assert classify(name, arguments) == expected


def test_patch_paths_include_moves_once_each() -> None:
    patch = "*** Update File: a\n*** Move to: b\n*** Delete File: c\n*** Update File: a\n"
    assert patch_paths(patch) == ["a", "b", "c"]


def test_command_line_unwraps_a_shell_and_keeps_anything_else() -> None:
    assert command_line('/bin/bash -lc "cd x && make"') == "cd x && make"
    assert command_line("echo 'unbalanced") == "echo 'unbalanced"
    assert command_line(["git", "status"]) == "git status"
    assert command_line(7) is None


def _nested(inner: st.SearchStrategy) -> st.SearchStrategy:
    return st.lists(inner, min_size=1, max_size=3) | st.dictionaries(
        st.text(max_size=8), inner, min_size=1, max_size=4
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20), _nested, max_leaves=20
)
event_types = st.sampled_from(
    ["assistant", "user", "result", "item.completed", "item.started", "turn.failed", "error",
     "step_start", "step_finish", "tool_use", "text", "reasoning", "thread.started"]
)  # fmt: skip
events = st.lists(
    st.fixed_dictionaries(
        {"type": event_types},
        optional={
            "message": json_values,
            "item": json_values,
            "part": json_values,
            "error": json_values,
            "usage": json_values,
            "timestamp": json_values,
        },
    ),
    max_size=8,
)


@pytest.mark.parametrize("cli", ["codex", "claude", "opencode"])
@given(stream=events)
def test_parsers_never_fail_on_events_of_any_shape(cli, stream) -> None:
    for step in PARSERS[cli](stream):
        assert step.source in ("agent", "system")


@given(name=st.text(max_size=20), arguments=st.dictionaries(st.text(max_size=10), json_values))
def test_classify_never_fails(name, arguments) -> None:
    kind, paths, _command = classify(name, arguments)
    assert kind in ("shell", "read", "edit", "search", "other")
    assert all(isinstance(p, str) for p in paths)
