"""The agent-CLI judge transport (judge/agent.py): fake CLIs for its parsing and failures,
the real Claude Code and Codex against the scripted model server for the rest."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_agentbench.agents.prices import Price
from pytest_agentbench.cli import main
from pytest_agentbench.judge.agent import agent_asker
from pytest_agentbench.judge.asking import JudgeError
from pytest_agentbench.testing.clis import PINS, find_cli, missing_reason

if TYPE_CHECKING:
    from pytest_agentbench.testing.model_server import ScriptedModelServer
    from pytest_agentbench.testing.pytest_plugin import ServerFactory

pytest_plugins = ["pytest_agentbench.testing.pytest_plugin"]

KEYS = {"claude": "ANTHROPIC_API_KEY", "codex": "OPENAI_API_KEY"}
VERDICT = '{"winner": "B", "reason": "B keeps the tests green"}'
CLAUDE_RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "num_turns": 1,
    "result": VERDICT,
    "total_cost_usd": 0.0123,
    "usage": {
        "input_tokens": 100,
        "cache_read_input_tokens": 20,
        "cache_creation_input_tokens": 5,
        "output_tokens": 40,
    },
}
CODEX_EVENTS: list[dict[str, object]] = [
    {"type": "thread.started", "thread_id": "t-1"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"type": "agent_message", "text": "thinking aloud"}},
    {"type": "item.completed", "item": {"type": "agent_message", "text": VERDICT}},
    {
        "type": "turn.completed",
        "usage": {"input_tokens": 900, "cached_input_tokens": 400, "output_tokens": 60},
    },
]


def fake_cli(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    stdout: str,
    code: int = 0,
    stderr: str = "",
    sleep: float = 0,
) -> Path:
    """A script standing for the CLI (found as the harness finds it, by its BIN variable):
    it records its argv, cwd, stdin and environment, then prints stdout and exits with code."""
    record = tmp_path / "record.json"
    script = tmp_path / f"fake-{kind}"
    script.write_text(
        f"""#!/usr/bin/env python3
import json, os, sys, time
json.dump({{"argv": sys.argv[1:], "cwd": os.getcwd(), "stdin": sys.stdin.read(),
           "cwd_entries": os.listdir("."), "env": dict(os.environ)}}, open({str(record)!r}, "w"))
sys.stdout.write({stdout!r})
sys.stderr.write({stderr!r})
time.sleep({sleep!r})
sys.exit({code!r})
""",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(PINS[kind].bin_env, str(script))
    monkeypatch.setenv(KEYS[kind], "sk-fake-secret-0123456789")
    return record


def jsonl(events: list[dict[str, object]]) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


def test_claude_json_result_gives_text_tokens_and_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = fake_cli(tmp_path, monkeypatch, "claude", json.dumps(CLAUDE_RESULT))
    asker = agent_asker("claude", "claude-sonnet-4-5", "http://127.0.0.1:9")
    answer = asker.ask("You judge changes.", "Which change is better?")
    assert asker.name == "agent:claude:claude-sonnet-4-5"
    assert answer.text == VERDICT
    assert (answer.input_tokens, answer.output_tokens) == (125, 40)  # cache reads and writes in
    assert answer.cost_usd == pytest.approx(0.0123)
    seen = json.loads(record.read_text())
    argv = seen["argv"]
    assert argv[argv.index("--output-format") + 1] == "json"
    assert argv[argv.index("--tools") + 1] == ""
    assert argv[argv.index("--system-prompt") + 1] == "You judge changes."
    assert argv[argv.index("--model") + 1] == "claude-sonnet-4-5"
    assert "Which change is better?" not in argv  # the prompt comes on stdin
    assert seen["stdin"] == "Which change is better?"
    assert seen["cwd_entries"] == []
    assert not Path(seen["cwd"]).exists()  # removed after the question
    env = seen["env"]
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert env["CLAUDE_CONFIG_DIR"].startswith(env["HOME"])
    assert not Path(seen["cwd"]).is_relative_to(env["HOME"])


def test_codex_events_give_the_last_message_and_a_price_from_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = fake_cli(tmp_path, monkeypatch, "codex", jsonl(CODEX_EVENTS))
    price = Price(as_of="2026-11-01", input=1.0, cached_input=0.1, output=10.0)
    asker = agent_asker("codex", "gpt-x", "http://127.0.0.1:9/v1", prices={"gpt-x": price})
    answer = asker.ask("You judge changes.", "Which change is better?")
    assert answer.text == VERDICT
    assert (answer.input_tokens, answer.output_tokens) == (900, 60)
    assert answer.cost_usd == pytest.approx((500 * 1.0 + 400 * 0.1 + 60 * 10.0) / 1e6)
    argv = json.loads(record.read_text())["argv"]
    assert argv[:2] == ["exec", "--json"] and "--ephemeral" in argv and argv[-1] == "-"
    overrides = [argv[i + 1] for i, a in enumerate(argv) if a == "-c"]
    assert 'sandbox_mode="read-only"' in overrides
    assert "features.shell_tool=false" in overrides
    assert 'developer_instructions="You judge changes."' in overrides
    assert 'model_providers.agentbench.base_url="http://127.0.0.1:9/v1"' in overrides


def test_codex_without_a_price_has_unknown_cost_and_default_model_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cli(tmp_path, monkeypatch, "codex", jsonl(CODEX_EVENTS))
    asker = agent_asker("codex", None, None)
    answer = asker.ask("", "Which?")
    assert asker.name == "agent:codex:default"
    assert answer.cost_usd is None and answer.input_tokens == 900


@pytest.mark.parametrize(
    ("kind", "stdout", "code", "said"),
    [
        ("claude", json.dumps({**CLAUDE_RESULT, "is_error": True, "result": "API Error: 529"}),
         1, "exited with code 1"),
        ("claude", "", 0, "exited with code 0 but gave no final message"),
        ("codex", jsonl([{"type": "turn.started"}, {"type": "turn.failed", "error": {}}]),
         1, "exited with code 1"),
        ("codex", jsonl(CODEX_EVENTS[:2]), 0, "exited with code 0 but gave no final message"),
    ],
)  # fmt: skip
def test_a_failed_cli_is_a_judge_error_with_its_code_and_tails(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    stdout: str,
    code: int,
    said: str,
) -> None:
    fake_cli(tmp_path, monkeypatch, kind, stdout, code, stderr="boom sk-fake-secret-0123456789")
    with pytest.raises(JudgeError) as caught:
        agent_asker(kind, "m", None).ask("s", "p")
    message = str(caught.value)
    assert message.startswith(f"agent:{kind}:m: {kind} {said}")
    assert "stderr: boom [redacted]" in message and "sk-fake-secret" not in message
    if kind == "claude" and code:
        assert "API Error: 529" in message  # Claude Code says why in its output, not stderr


def test_a_cli_past_its_timeout_is_killed_and_a_judge_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cli(tmp_path, monkeypatch, "claude", json.dumps(CLAUDE_RESULT), sleep=30)
    with pytest.raises(JudgeError, match=r"claude timed out after 0.5 s"):
        agent_asker("claude", None, None, timeout=0.5).ask("s", "p")


def test_unknown_kind_missing_cli_and_missing_key_are_judge_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(JudgeError, match="'opencode': no such agent CLI judge; use claude or"):
        agent_asker("opencode", None, None)
    fake_cli(tmp_path, monkeypatch, "claude", "")
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(JudgeError, match="claude: no credentials: set ANTHROPIC_API_KEY or"):
        agent_asker("claude", None, None)
    monkeypatch.setenv(PINS["claude"].bin_env, "")
    monkeypatch.setenv("AGENTBENCH_CLI_CACHE", str(tmp_path / "no-cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with pytest.raises(JudgeError, match="claude CLI not found"):
        agent_asker("claude", None, None)


# The real CLIs ------------------------------------------------------------------------------


def real_cli(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if find_cli(kind) is None:
        pytest.skip(missing_reason(kind))
    monkeypatch.setenv(KEYS[kind], f"sk-scripted-{os.getpid()}-judge")


def asked_body(server: ScriptedModelServer, prompt: str) -> dict[str, object]:
    bodies = [r.body for r in server.requests if json.dumps(prompt)[1:-1] in json.dumps(r.body)]
    assert len(bodies) == 1, [r.served for r in server.requests]
    body: dict[str, object] = bodies[0]
    return body


@pytest.mark.real
def test_real_claude_judges_with_no_tools(
    monkeypatch: pytest.MonkeyPatch, agentbench_model_server: ServerFactory
) -> None:
    real_cli("claude", monkeypatch)
    # Requests without tools are the server's side requests: their text is the verdict.
    server = agentbench_model_server({"side_message": VERDICT, "turns": []})
    asker = agent_asker("claude", "scripted-model", server.base_url, timeout=60)
    prompt = "/compare change A with change B " + "diff line\n" * 20_000  # past one argv string
    answer = asker.ask("You are a blind judge. JUDGE-SYSTEM-MARK", prompt)
    assert answer.text == VERDICT
    assert (answer.input_tokens, answer.output_tokens) == (30, 5)  # the script's side usage
    assert answer.cost_usd is None  # Claude Code prices an unknown model as a guess
    body = asked_body(server, prompt)
    assert "tools" not in body or body["tools"] == []
    assert "JUDGE-SYSTEM-MARK" in json.dumps(body["system"])
    assert "You are Claude Code" not in json.dumps(body["system"])  # its own prompt replaced
    assert [r.served for r in server.requests] == ["side"]


@pytest.mark.real
def test_real_codex_judges_with_only_the_tool_it_cannot_drop(
    monkeypatch: pytest.MonkeyPatch, agentbench_model_server: ServerFactory
) -> None:
    real_cli("codex", monkeypatch)
    server = agentbench_model_server({"turns": [{"message": VERDICT}]})
    asker = agent_asker("codex", "scripted-model", server.openai_base_url, timeout=60)
    prompt = "Compare change A with change B.\n" + "diff line\n" * 20_000
    answer = asker.ask("You are a blind judge. JUDGE-SYSTEM-MARK", prompt)
    assert answer.text == VERDICT
    assert (answer.input_tokens, answer.output_tokens) == (1000, 50)  # the script's usage
    assert answer.cost_usd is None  # codex reports no cost and no price was given
    body = asked_body(server, prompt)
    tools = [t.get("name") for t in body["tools"]]  # type: ignore[attr-defined]
    assert tools == ["request_user_input"]
    developer = [m for m in body["input"] if m.get("role") == "developer"]  # type: ignore[attr-defined]
    assert "JUDGE-SYSTEM-MARK" in json.dumps(developer)
    assert [r.served for r in server.requests] == ["message"]


@pytest.mark.real
def test_real_claude_judges_a_run_end_to_end(
    arm_run: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    agentbench_model_server: ServerFactory,
) -> None:
    # The mock run's two tasks, each pair asked in both orders: four questions to Claude Code,
    # answered by the scripted judge that prefers the shorter diff (vanilla's: no stray file).
    real_cli("claude", monkeypatch)
    server = agentbench_model_server({"judge": "shorter", "turns": []})
    args = ["judge", str(arm_run), "--pair", "vanilla,core", "--judge-agent", "claude"]
    args += ["--judge-model", "scripted-model", "--judge-base-url", server.base_url]
    assert main([*args, "--judge-timeout", "120"]) == 0
    out = capsys.readouterr().out
    assert "agent:claude:scripted-model: vanilla 2-0-0 win rate 1.00 [0.43, 1.00]" in out
    assert "consistency 1.00 of 2" in out and "FLAG" not in out
    lines = (arm_run / "judgements.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == 4 and {r["judge"] for r in records} == {"agent:claude:scripted-model"}
    assert all(r["error"] is None and r["winner"] == "vanilla" for r in records), records
    assert sorted(r["verdict"] for r in records) == ["A", "A", "B", "B"]  # both orders asked
    assert all(f["side"] == "core" for r in records for f in r["findings"])
    assert {r.served for r in server.requests} == {"judge"}
    asked = len(server.requests)
    assert main(args) == 0  # the second time every answer comes from judgements.jsonl
    assert len(server.requests) == asked
