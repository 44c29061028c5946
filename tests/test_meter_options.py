"""The meter's options: on by default for the CLIs that hold an API key, never for the offline
and command agents, said in the report when a CLI runs unmetered; bad values are usage errors
before any trial."""

from __future__ import annotations

import json
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

import pytest
from tiny_tasks import TINY_RUN, make_tasks, slow_suite

from pytest_agentbench.agents.claude import ClaudeAgent
from pytest_agentbench.agents.cli_base import CliAgent
from pytest_agentbench.agents.codex import CodexAgent
from pytest_agentbench.agents.opencode import OpencodeAgent
from pytest_agentbench.settings import Settings

# A stand-in for Claude Code that answers from its event stream alone (it reaches no network):
# enough to see whether the harness meters it. Its tokens are its own report.
FAKE_CLAUDE = """#!/bin/sh
if [ "$1" = --version ]; then echo "2.1.332 (Claude Code)"; exit 0; fi
echo '{"type":"system","subtype":"init","session_id":"s1"}'
echo '{"type":"result","subtype":"success","is_error":false,"session_id":"s1","num_turns":1,\
"result":"Done.","usage":{"input_tokens":10,"cache_read_input_tokens":0,\
"cache_creation_input_tokens":0,"output_tokens":2}}'
"""
CLAUDE_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agentbench-meter=maybe"], "*--agentbench-meter 'maybe': choose one of off, on, auto*"),
        (
            ["--agentbench-meter=off", "--agentbench-faults=1:500"],
            "*act through the meter: drop --agentbench-meter=off*",
        ),
        (
            ["--agentbench-meter=on", "--agentbench-faults=every:2"],
            "*'every:2' is neither N:STATUS nor every:K:STATUS*",
        ),
        (["--agentbench-meter=on"], "*--agentbench-meter=on: --agent=mock is never metered*"),
        (["--agentbench-faults=1:500"], "*--agentbench-faults: --agent=mock is never metered*"),
    ],
)
def test_bad_meter_options_stop_the_run_before_any_trial(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    slow_suite(pytester)
    result = pytester.runpytest_subprocess(*TINY_RUN, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_the_command_agent_is_never_metered(pytester: pytest.Pytester) -> None:
    """The harness cannot know which provider a command calls: asking to meter it is refused."""
    make_tasks(pytester.path, 1)
    result = pytester.runpytest_subprocess(
        "--agent=command", "--agent-cmd=true", "--tasks=tiny-tasks", "--sandbox=tmp",
        "--agentbench-meter=on",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentbench-meter=on: --agent=command is never metered*"])


def test_an_offline_agent_by_default_has_no_meter_output(pytester: pytest.Pytester) -> None:
    slow_suite(pytester)
    result = pytester.runpytest_subprocess(*TINY_RUN, "--agentbench-json=report.json")
    report = json.loads((pytester.path / "report.json").read_text())
    assert "metering" not in report
    assert not any("metered" in obs for obs in report["observations"])
    assert report["run"]["settings"]["meter"] == "auto"
    assert {"faults", "meter_log"}.isdisjoint(report["run"]["settings"])
    assert "faults" not in report["run"]["identity"]
    assert not any(line.startswith("meter") for line in result.stdout.lines)


@pytest.fixture
def fake_claude(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in CLAUDE_KEYS:
        monkeypatch.delenv(name, raising=False)
    make_tasks(pytester.path, 1)
    binary = pytester.path / "fake-claude"
    binary.write_text(FAKE_CLAUDE)
    binary.chmod(0o755)
    return binary


def test_a_cli_logged_in_with_an_account_runs_unmetered_and_the_report_says_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fake_claude: Path
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", "an-account-login")
    result = pytester.runpytest_subprocess(
        "--agent=claude", f"--agent-opt=bin={fake_claude}", "--tasks=tiny-tasks",
        "--sandbox=tmp", "--agentbench-json=report.json", "--agentbench-dir=run",
    )  # fmt: skip
    report = json.loads((pytester.path / "report.json").read_text())
    (obs,) = report["observations"]
    assert "metered" not in obs and obs["tokens"]["input"] == 10
    rebuilt = subprocess.run(
        [sys.executable, "-m", "pytest_agentbench.cli", "report", "run", "--format", "json"],
        cwd=pytester.path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(rebuilt.stdout)["metering"] == report["metering"]
    why = "it authenticates with CLAUDE_CODE_OAUTH_TOKEN, not an API key in ANTHROPIC_API_KEY"
    assert (
        report["run"]["agent_info"]["meter"]
        == f"unmetered: {why} (an account login is not metered)"
    )
    assert report["metering"]["claude"]["unmetered_reason"].startswith(why)
    result.stdout.fnmatch_lines(  # inside the agentbench block, which comes last
        ["*= agentbench =*", f"meter: claude ran unmetered (1 trial): {why}*", "*= 1 failed in *"]
    )


def test_meter_off_leaves_a_cli_run_without_meter_output(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fake_claude: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-used")
    result = pytester.runpytest_subprocess(
        "--agent=claude", f"--agent-opt=bin={fake_claude}", "--tasks=tiny-tasks",
        "--sandbox=tmp", "--agentbench-json=report.json", "--agentbench-meter=off",
    )  # fmt: skip
    report = json.loads((pytester.path / "report.json").read_text())
    assert "metering" not in report and "metered" not in report["observations"][0]
    assert report["run"]["settings"]["meter"] == "off"
    assert not any(line.startswith("meter") for line in result.stdout.lines)


def test_meter_on_for_a_cli_without_a_key_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fake_claude: Path
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", "an-account-login")
    result = pytester.runpytest_subprocess(
        "--agent=claude", f"--agent-opt=bin={fake_claude}", "--tasks=tiny-tasks",
        "--agentbench-meter=on",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--agentbench-meter=on: --agent=claude cannot be metered here: it authenticates with "
         "CLAUDE_CODE_OAUTH_TOKEN, not an API key in ANTHROPIC_API_KEY*"]
    )  # fmt: skip


GW = "http://gw:1/v1"


@pytest.mark.parametrize(
    ("cls", "opts", "env", "route"),
    [
        (CodexAgent, {}, {"OPENAI_API_KEY": "k"}, ("https://api.openai.com/v1", None)),
        (ClaudeAgent, {"base_url": GW}, {"ANTHROPIC_API_KEY": "k"}, (GW, None)),
        (OpencodeAgent, {"base_url": GW}, {"OPENAI_API_KEY": "k"}, (GW, None)),
        (CodexAgent, {}, {"CODEX_API_KEY": "k"}, (None, "it authenticates with CODEX_API_KEY, *")),
        (ClaudeAgent, {}, {}, (None, "no API key in ANTHROPIC_API_KEY")),
        (OpencodeAgent, {}, {"OPENAI_API_KEY": "k"}, (None, "opencode's own providers cannot*")),
    ],
)
def test_a_cli_is_metered_where_it_holds_an_api_key_for_a_provider_it_can_be_pointed_at(
    monkeypatch: pytest.MonkeyPatch,
    cls: type[CliAgent],
    opts: dict[str, str],
    env: dict[str, str],
    route: tuple[str | None, str | None],
) -> None:
    for name in {
        *CodexAgent.credential_env,
        *ClaudeAgent.credential_env,
        *OpencodeAgent.credential_env,
    }:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    opts = {"bin": "/bin/true", **opts}
    agent = cls(Settings(agent=cls.name, model="m", agent_opts=opts))
    upstream, why_not = agent.meter_route()
    assert upstream == route[0]
    assert (why_not is None) == (route[1] is None) and fnmatch(why_not or "", route[1] or "")
    assert agent.meter_upstream() == upstream  # auto: unmetered is no error
    assert agent.info()["meter"] == ("metered" if upstream else f"unmetered: {why_not}")
    off = cls(
        Settings(agent=cls.name, model="m", meter="off", agent_opts={"bin": "/bin/true", **opts})
    )
    assert off.meter_route() == (None, "--agentbench-meter=off")
