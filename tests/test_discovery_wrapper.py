"""The discovery run's input stays open until every request is answered, and no longer: a
JSON-RPC notification (codex's `initialized`) gets no answer, so waiting for one would hold
every trial's discovery until the wrapper's own 30 s limit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pytest_agentbench.agents.cli_base import _DISCOVERY_WRAPPER, request_ids

REQUESTS = [
    {"jsonrpc": "2.0", "id": "initialize", "method": "initialize"},
    {"jsonrpc": "2.0", "method": "initialized"},  # a notification: never answered
    {"jsonrpc": "2.0", "id": "skills", "method": "skills/list"},
    {"type": "control_request", "request_id": "usage", "request": {"subtype": "get_usage"}},
]
# A server that answers each request carrying an id, in reverse order once all have arrived,
# and exits only at the end of its input (as codex app-server and Claude Code do).
SERVER = """
import json, sys
asked = []
for line in sys.stdin:
    request = json.loads(line)
    key = request.get("id", request.get("request_id"))
    if key is not None:
        asked.append(key)
    if len(asked) == 3:
        for key in reversed(asked):
            print(json.dumps({"id": key, "result": {}}), flush=True)
        asked.append(None)
print(json.dumps({"end_of_input": True}), flush=True)
"""


def test_a_notification_is_not_waited_for() -> None:
    text = "".join(json.dumps(r) + "\n" for r in REQUESTS)
    assert request_ids(text) == ["initialize", "skills", "usage"]


def test_the_wrapper_closes_the_input_once_every_request_is_answered(tmp_path: Path) -> None:
    requests, answers = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    text = "".join(json.dumps(r) + "\n" for r in REQUESTS)
    requests.write_text(text)
    ids = " ".join(request_ids(text))
    argv = ["sh", "-c", _DISCOVERY_WRAPPER, "discovery", requests, answers, ids]
    # Well under the wrapper's 30 s limit: only closing the input early ends the server.
    subprocess.run([*argv, sys.executable, "-c", SERVER], check=True, timeout=15)
    lines = [json.loads(line) for line in answers.read_text().splitlines()]
    assert [line.get("id") for line in lines[:3]] == ["usage", "skills", "initialize"]
    assert lines[-1] == {"end_of_input": True}
