"""The scripted model server: wire formats, script walking, faults, records, bounded life."""

from __future__ import annotations

import http.client
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.cli import main as agentbench_main
from pytest_agentbench.testing.model_server import (
    PrefixCache,
    ScriptedModelServer,
    ScriptError,
    Usage,
    common_prefix,
    load_script,
    prompt_text,
    workdir_of,
)

RESPONSES_TOOLS = {"tools": [{"type": "function", "name": "exec_command"}]}
MESSAGES_TOOLS = {"tools": [{"name": "Bash"}, {"name": "Read"}, {"name": "Edit"}]}
CHAT_TOOLS = {"tools": [{"type": "function", "function": {"name": "bash"}}]}


def post(
    server: ScriptedModelServer, path: str, body: dict[str, Any], key: str = ""
) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    try:
        conn.request("POST", path, json.dumps(body), headers)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def sse_data(text: str) -> list[Any]:
    out = []
    for line in text.splitlines():
        if line.startswith("data: "):
            payload = line[len("data: ") :]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


@pytest.fixture
def server() -> Any:
    script = {
        "usage": {"input": 100, "cached_input": 60, "output": 20, "reasoning": 5},
        "turns": [{"calls": [{"shell": "ls -la"}]}, {"message": "bye"}],
    }
    with ScriptedModelServer(script) as running:
        yield running


def test_responses_stream_for_codex(server: ScriptedModelServer) -> None:
    status, text = post(server, "/v1/responses", RESPONSES_TOOLS)
    assert status == 200
    events = sse_data(text)
    call = events[1]["item"]
    assert call["type"] == "function_call" and call["name"] == "exec_command"
    assert json.loads(call["arguments"]) == {"cmd": "ls -la"}
    usage = events[-1]["response"]["usage"]
    assert usage["input_tokens"] == 100 and usage["input_tokens_details"]["cached_tokens"] == 60
    assert usage["output_tokens"] == 20 and usage["output_tokens_details"]["reasoning_tokens"] == 5
    _, text = post(server, "/v1/responses", RESPONSES_TOOLS)
    message = sse_data(text)[1]["item"]
    assert message["content"][0]["text"] == "bye"


def test_messages_stream_for_claude_splits_cache_reads(server: ScriptedModelServer) -> None:
    status, text = post(server, "/v1/messages?beta=true", MESSAGES_TOOLS)
    assert status == 200
    events = sse_data(text)
    start = events[0]["message"]["usage"]
    assert start["input_tokens"] == 40 and start["cache_read_input_tokens"] == 60
    assert events[1]["content_block"]["name"] == "Bash"
    assert json.loads(events[2]["delta"]["partial_json"])["command"] == "ls -la"
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    assert events[-2]["usage"]["output_tokens"] == 20


def test_chat_stream_for_opencode_ends_with_done(server: ScriptedModelServer) -> None:
    _, text = post(server, "/v1/chat/completions", CHAT_TOOLS)
    events = sse_data(text)
    assert events[-1] == "[DONE]"
    calls = [e for e in events[:-1] if e["choices"] and e["choices"][0]["delta"].get("tool_calls")]
    assert calls[0]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "bash"
    assert events[-2]["usage"]["prompt_tokens"] == 100
    assert events[-2]["usage"]["prompt_tokens_details"]["cached_tokens"] == 60


def test_requests_without_tools_do_not_advance_the_script(server: ScriptedModelServer) -> None:
    post(server, "/v1/chat/completions", {"messages": [{"role": "user", "content": "title?"}]})
    _, text = post(server, "/v1/chat/completions", CHAT_TOOLS)
    assert "tool_calls" in text
    assert [r.served for r in server.requests] == ["side", "calls"]
    assert server.served_usage()["input"] == 100
    assert server.served_usage(include_side=True)["input"] == 130


def test_edits_are_preceded_by_reads_for_clients_that_need_them() -> None:
    script = {"turns": [{"calls": [{"edit": "a.txt", "old": "x", "new": "y"}]}]}
    body = {**MESSAGES_TOOLS, "system": "Primary working directory: /w/s"}
    with ScriptedModelServer(script) as server:
        first = sse_data(post(server, "/v1/messages", body)[1])
        second = sse_data(post(server, "/v1/messages", body)[1])
    assert first[1]["content_block"]["name"] == "Read"
    assert json.loads(first[2]["delta"]["partial_json"]) == {"file_path": "/w/s/a.txt"}
    assert second[1]["content_block"]["name"] == "Edit"
    assert [r.served for r in server.requests] == ["reads", "calls"]


def test_codex_file_edits_are_apply_patch() -> None:
    script = {"turns": [{"calls": [{"write": "new.txt", "content": "a\nb\n"}]}]}
    with ScriptedModelServer(script) as server:
        events = sse_data(post(server, "/v1/responses", RESPONSES_TOOLS)[1])
    cmd = json.loads(events[1]["item"]["arguments"])["cmd"]
    assert cmd.startswith("apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: new.txt\n+a\n+b\n")


@pytest.mark.parametrize(
    ("status", "kind"), [(429, "rate_limit_error"), (401, "authentication_error")]
)
def test_fault_answers_every_request_until_times_runs_out(status: int, kind: str) -> None:
    script = {"turns": [{"fault": status, "times": 2}, {"message": "ok"}]}
    with ScriptedModelServer(script) as server:
        answers = [post(server, "/v1/messages", MESSAGES_TOOLS) for _ in range(3)]
    assert [a[0] for a in answers] == [status, status, 200]
    assert json.loads(answers[0][1])["error"]["type"] == kind
    assert server.requests[0].usage is None


def test_dropped_stream_closes_early() -> None:
    with ScriptedModelServer({"turns": [{"fault": "drop"}]}) as server:
        status, text = post(server, "/v1/responses", RESPONSES_TOOLS)
    assert status == 200 and "response.completed" not in text


def test_hang_is_released_when_the_server_stops() -> None:
    server = ScriptedModelServer({"turns": [{"fault": "hang", "seconds": 60}]}).start()
    errors: list[BaseException] = []

    def call() -> None:
        try:
            post(server, "/v1/responses", RESPONSES_TOOLS)
        except (OSError, http.client.HTTPException) as exc:
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    time.sleep(0.5)
    started = time.monotonic()
    server.stop()
    thread.join(timeout=10)
    assert not thread.is_alive() and time.monotonic() - started < 5


def test_server_stops_by_itself_when_idle() -> None:
    server = ScriptedModelServer({"idle_timeout": 0.3, "turns": []}).start()
    started = time.monotonic()
    server.wait()
    assert time.monotonic() - started < 5


def test_script_beyond_its_end_still_lets_the_client_finish(server: ScriptedModelServer) -> None:
    for _ in range(3):
        post(server, "/v1/responses", RESPONSES_TOOLS)
    assert server.requests[-1].served == "end-of-script"


def test_workdir_is_read_from_each_clients_prompt() -> None:
    assert workdir_of({"input": [{"text": "<cwd>/a/b</cwd>"}]}) == "/a/b"
    assert workdir_of({"messages": [{"content": "  Working directory: /c/d\n"}]}) == "/c/d"
    assert workdir_of({"messages": []}) is None


@pytest.mark.parametrize(
    ("script", "words"),
    [
        ({}, '"turns" list'),
        ({"turns": [{"calls": []}]}, "turns[0].calls"),
        ({"turns": [{"message": "a", "fault": 429}]}, "exactly one"),
        ({"turns": [{"fault": 200}]}, "turns[0].fault"),
        ({"turns": [{"calls": [{"edit": "a"}]}]}, '"old" and "new"'),
        ({"turns": [{"calls": [{"rm": "a"}]}]}, "calls[0]"),
        ({"usage": {"input": 1, "cached_input": 5}, "turns": []}, "cached_input"),
        ({"usage": {"inputs": 1}, "turns": []}, "usage"),
    ],
)
def test_bad_scripts_name_the_field(script: dict[str, Any], words: str) -> None:
    with pytest.raises(ScriptError) as info:
        load_script(script)
    assert words in str(info.value)


def test_serve_script_command_records_requests(tmp_path: Path, capsys: Any) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"message": "hi"}]}))
    record = tmp_path / "record.jsonl"
    done: list[int] = []
    thread = threading.Thread(
        target=lambda: done.append(
            agentbench_main(
                ["serve-script", str(script), "--idle-timeout", "1", "--record", str(record)]
            )
        )
    )
    thread.start()
    deadline = time.monotonic() + 5
    while "serving" not in (out := capsys.readouterr().out) and time.monotonic() < deadline:
        time.sleep(0.05)
    port = int(out.split("http://127.0.0.1:")[1].split()[0].strip("/"))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("POST", "/v1/responses", json.dumps(RESPONSES_TOOLS))
    assert conn.getresponse().status == 200
    conn.close()
    thread.join(timeout=10)
    assert done == [0]
    (line,) = record.read_text().splitlines()
    assert json.loads(line)["served"] == "message"


def test_serve_script_command_rejects_a_bad_script(tmp_path: Path, capsys: Any) -> None:
    script = tmp_path / "bad.json"
    script.write_text("{")
    assert agentbench_main(["serve-script", str(script)]) == 2
    assert str(script) in capsys.readouterr().err


def test_side_requests_get_the_scripts_side_message() -> None:
    script = {"side_message": '{"winner": "A"}', "turns": [{"message": "scripted turn"}]}
    with ScriptedModelServer(script) as server:
        _, text = post(server, "/v1/chat/completions", {"messages": [{"role": "user"}]})
    assert '\\"winner\\": \\"A\\"' in text
    assert [r.served for r in server.requests] == ["side"]
    assert not server.player.finished


# The prefix cache ----------------------------------------------------------------------------

SYSTEM = "You are a coding agent. " * 40
STEP_ONE = [{"role": "user", "content": "Fix the bug in a.py"}]
STEP_TWO = [*STEP_ONE, {"type": "function_call_output", "output": "ok " * 50}]


def cached_of(text: str) -> int:
    usage = sse_data(text)[-1]["response"]["usage"]
    cached: int = usage["input_tokens_details"]["cached_tokens"]
    return cached


def test_prefix_cache_reports_the_share_of_a_seen_prefix_per_key() -> None:
    script = {
        "prefix_cache": "key",
        "usage": {"input": 1000, "cached_input": 999, "output": 10},
        "turns": [],
    }
    first = {**RESPONSES_TOOLS, "instructions": SYSTEM, "input": STEP_ONE}
    later = {**first, "input": STEP_TWO}
    with ScriptedModelServer(script) as server:
        cold = cached_of(post(server, "/v1/responses", first, key="k1")[1])
        again = cached_of(post(server, "/v1/responses", first, key="k1")[1])
        grown = cached_of(post(server, "/v1/responses", later, key="k1")[1])
        other_key = cached_of(post(server, "/v1/responses", first, key="k2")[1])
    assert cold == 0  # a new cache holds nothing: the script's 999 is replaced
    assert again == 1000  # the whole prompt was seen
    whole, seen = prompt_text(later), prompt_text(first)
    assert grown == 1000 * common_prefix(whole, seen) // len(whole)
    assert 0 < grown < 1000
    assert other_key == 0  # each key has its own cache
    assert [r.usage["cached_input"] for r in server.requests if r.usage] == [0, 1000, grown, 0]


def test_item_ids_are_not_prompt_text() -> None:
    """codex gives each input item an id made afresh per session: the same conversation in
    another session is the same prompt."""
    one = {"input": [{"id": "msg_1", "role": "user", "content": [{"id": "a", "text": "hi"}]}]}
    two = {"input": [{"id": "msg_2", "role": "user", "content": [{"id": "b", "text": "hi"}]}]}
    assert prompt_text(one) == prompt_text(two)
    assert prompt_text(one) != prompt_text({"input": [{"role": "user", "content": "hi"}]})


def test_prefix_cache_is_deterministic_and_global_scope_is_shared() -> None:
    prompts = ["abcdef", "abcxyz", "abcdef", "q"]
    usage = Usage(input=600, cached_input=0, output=1, cache_write=500)

    def play() -> list[Usage]:
        cache = PrefixCache()
        return [cache.serve("global", p, usage) for p in prompts]

    served = play()
    assert served == play()
    assert [u.cached_input for u in served] == [0, 300, 600, 0]
    assert [u.cache_write for u in served] == [500, 300, 0, 500]  # cut to what input leaves


@pytest.mark.parametrize(
    ("a", "b", "n"), [("", "", 0), ("abc", "abd", 2), ("abc", "abc", 3), ("x", "xyz", 1)]
)
def test_common_prefix(a: str, b: str, n: int) -> None:
    assert common_prefix(a, b) == n


def test_a_bad_cache_scope_names_the_field() -> None:
    with pytest.raises(ScriptError, match=r"prefix_cache.*'keys'.*scope"):
        load_script({"prefix_cache": "keys", "turns": []})
