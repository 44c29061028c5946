"""Command lines, isolation, credentials and prices of the CLI adapters (no binary needed)."""

from __future__ import annotations

import json
import platform
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.agents.base import TokenUsage
from pytest_agentbench.agents.claude import ClaudeAgent
from pytest_agentbench.agents.cli_base import CliAgent, CliSession, CliTrial, StreamFacts
from pytest_agentbench.agents.codex import CodexAgent
from pytest_agentbench.agents.opencode import OpencodeAgent
from pytest_agentbench.agents.prices import Price, PriceTableError, load_prices
from pytest_agentbench.sandbox.base import run_process_group
from pytest_agentbench.sandbox.tmp import TmpProvider
from pytest_agentbench.settings import Settings
from pytest_agentbench.testing.clis import native_codex
from pytest_agentbench.testing.model_server import ScriptedModelServer

SECRET = "sk-very-secret-value-42"


def make(cls: type[CliAgent], model: str | None = "m1", **opts: str) -> CliAgent:
    return cls(Settings(agent=cls.name, model=model, agent_opts={"bin": "/bin/true", **opts}))


@pytest.fixture
def trial(tmp_path: Path) -> CliTrial:
    return CliTrial(tmp_path, str(tmp_path))  # unmetered, without a base_url or step cap


def test_codex_command_line_and_resume(trial: CliTrial) -> None:
    codex = make(CodexAgent, base_url="http://127.0.0.1:9/v1", api_key_env="MY_KEY", retries="0")
    trial = replace(trial, wire_url=codex.base_url)  # unmetered: the CLI is given base_url
    first = codex.command("-do it-", None, trial)
    assert first[:2] == ["exec", "--json"] and first[-2:] == ["--", "-do it-"]
    assert 'model_providers.agentbench.base_url="http://127.0.0.1:9/v1"' in first
    assert 'model_providers.agentbench.env_key="MY_KEY"' in first
    assert "model_providers.agentbench.request_max_retries=0" in first
    assert 'sandbox_mode="workspace-write"' in first
    resumed = codex.command("again", "thread-1", trial)
    assert resumed[:3] == ["exec", "resume", "--json"]
    assert resumed[-3:] == ["--", "thread-1", "again"]


def test_codex_home_is_not_under_its_tmpdir(trial: CliTrial) -> None:
    codex = make(CodexAgent)
    codex.prepare(trial)
    env = codex.child_env(trial)
    assert not env["CODEX_HOME"].startswith(env["TMPDIR"].rstrip("/") + "/")
    assert Path(env["CODEX_HOME"]).is_dir()


def test_claude_command_line(trial: CliTrial) -> None:
    claude = ClaudeAgent(
        Settings(agent="claude", model="m1", reasoning="high", agent_opts={"bin": "/bin/true"})
    )
    argv = claude.command("fix it", "sess-1", trial)
    assert argv[:5] == ["-p", "--output-format", "stream-json", "--verbose", "--strict-mcp-config"]
    for pair in (["--model", "m1"], ["--effort", "high"], ["--resume", "sess-1"]):
        assert any(argv[i : i + 2] == pair for i in range(len(argv)))
    assert argv[-2:] == ["--", "fix it"]
    env = claude.child_env(trial)
    assert env["IS_SANDBOX"] == "1" and env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"


def test_claude_key_from_another_variable(trial: CliTrial, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_KEY", SECRET)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    claude = make(ClaudeAgent, base_url="http://gw:8080", api_key_env="GATEWAY_KEY")
    env = claude.child_env(replace(trial, wire_url=claude.base_url))
    assert env["ANTHROPIC_API_KEY"] == SECRET and env["ANTHROPIC_BASE_URL"] == "http://gw:8080"


def test_opencode_config_names_the_key_variable_never_its_value(
    trial: CliTrial, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_KEY", SECRET)
    oc = make(OpencodeAgent, base_url="http://127.0.0.1:9/v1", api_key_env="GATEWAY_KEY")
    trial = replace(trial, wire_url=oc.base_url)
    oc.prepare(trial)
    text = trial.host("opencode.json").read_text()
    assert SECRET not in text
    provider = json.loads(text)["provider"]["agentbench"]
    assert provider["options"] == {
        "baseURL": "http://127.0.0.1:9/v1",
        "apiKey": "{env:GATEWAY_KEY}",
    }
    argv = oc.command("go", "ses_1", trial)
    assert argv[argv.index("-m") : argv.index("-m") + 2] == ["-m", "agentbench/m1"]
    assert argv[-4:] == ["-s", "ses_1", "--", "go"]
    assert oc.child_env(trial)["GATEWAY_KEY"] == SECRET


def test_opencode_with_base_url_needs_a_model() -> None:
    with pytest.raises(pytest.UsageError, match="needs --model"):
        make(OpencodeAgent, model=None, base_url="http://127.0.0.1:9/v1")


@pytest.mark.parametrize("cls", [CodexAgent, ClaudeAgent, OpencodeAgent])
def test_parent_agent_session_variables_never_reach_the_child(
    cls: type[CliAgent], trial: CliTrial, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CODEX_SANDBOX", "CODEX_HOME",
                 "OPENCODE", "OPENCODE_CONFIG_CONTENT", "AWS_SECRET_ACCESS_KEY"):  # fmt: skip
        monkeypatch.setenv(name, "from-the-parent")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    env = make(cls).child_env(trial)
    assert "from-the-parent" not in env.values()
    assert env["HOME"] == str(trial.host_home)
    assert env["XDG_CONFIG_HOME"].startswith(str(trial.host_home))
    if cls is not ClaudeAgent:
        assert env["OPENAI_API_KEY"] == SECRET


def test_extra_variables_pass_only_when_named(
    trial: CliTrial, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CORP_CA_BUNDLE", "/etc/ca.pem")
    assert "CORP_CA_BUNDLE" not in make(CodexAgent).child_env(trial)
    assert make(CodexAgent, env="CORP_CA_BUNDLE").child_env(trial)["CORP_CA_BUNDLE"]


def test_credentials_are_scrubbed_from_saved_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    claude = make(ClaudeAgent)
    assert claude.scrub(f"error: bad key {SECRET}!") == "error: bad key [redacted]!"


def test_unknown_agent_option_is_a_usage_error() -> None:
    with pytest.raises(pytest.UsageError, match=r"permission_mode.*allowed: .*sandbox"):
        make(CodexAgent, permission_mode="x")


def test_missing_binary_names_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTBENCH_CLI_CACHE", str(tmp_path))
    monkeypatch.delenv("AGENTBENCH_CODEX_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.UsageError, match=r"install-agent-clis\.sh.*bin=PATH"):
        CodexAgent(Settings(agent="codex"))


def test_a_bin_path_that_is_not_executable_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(pytest.UsageError, match=r"bin=/nonexistent/codex: no executable file"):
        CodexAgent(Settings(agent="codex", agent_opts={"bin": "/nonexistent/codex"}))
    (tmp_path / "codex").write_text("#!/bin/sh\n")  # present but not executable
    with pytest.raises(pytest.UsageError, match="no executable file"):
        CodexAgent(Settings(agent="codex", agent_opts={"bin": str(tmp_path / "codex")}))


class _Sandbox:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.inner_home = str(home)


class _Task:
    def __init__(self, max_steps: int | None) -> None:
        self.max_steps = max_steps


class _Ctx:
    arm = None  # a run without arms
    priming = False  # no warm arm's priming run

    def __init__(self, home: Path, max_steps: int | None = None) -> None:
        self.sandbox = _Sandbox(home)
        self.task = _Task(max_steps)

    def step_limit(self, turn: int) -> int | None:  # one leg: the task's whole cap
        return self.task.max_steps


def test_session_cumulative_usage_becomes_per_round(tmp_path: Path) -> None:
    session = CliSession(make(CodexAgent), _Ctx(tmp_path))  # type: ignore[arg-type]
    assert session.round_tokens(TokenUsage(2000, 1600, 100, 20)) == TokenUsage(2000, 1600, 100, 20)
    assert session.round_tokens(TokenUsage(4000, 3200, 200, 40)) == TokenUsage(2000, 1600, 100, 20)
    assert session.round_tokens(None) is None  # a failed round: unknown ...
    assert session.round_tokens(TokenUsage(9000, 0, 0, 0)) is None  # ... and so is the next


# Price table ---------------------------------------------------------------------------------


def test_price_table_prices_tokens(tmp_path: Path) -> None:
    path = tmp_path / "prices.toml"
    path.write_text('["m1"]\nas_of = 2026-11-01\ninput = 2.0\ncached_input = 0.5\noutput = 10.0\n')
    price = load_prices(path)["m1"]
    assert price.as_of == "2026-11-01"
    assert price.cost(TokenUsage(1_000_000, 400_000, 100_000, None)) == pytest.approx(
        1.2 + 0.2 + 1.0
    )
    assert price.cost(TokenUsage(1000, None, 10, None)) is None


def test_price_is_used_only_where_the_cli_gives_no_cost(tmp_path: Path) -> None:
    codex = CodexAgent(
        Settings(agent="codex", model="m1", agent_opts={"bin": "/bin/true"}),
        prices={"m1": Price("2026-11-01", 1.0, 0.1, 2.0)},
    )
    from pytest_agentbench.agents.cli_base import StreamFacts

    tokens = TokenUsage(1_000_000, 0, 1_000_000, 0)
    assert codex.price(StreamFacts(tokens=tokens), tokens) == pytest.approx(3.0)
    assert make(CodexAgent).price(StreamFacts(tokens=tokens), tokens) is None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('["m"]\ninput = 1\ncached_input = 1\noutput = 1\n', "as_of"),
        ('["m"]\nas_of = "2026-01-01"\ninput = -1\ncached_input = 1\noutput = 1\n', "'input'"),
        ('["m"]\nas_of = "2026-01-01"\ninput = 1\noutput = 1\n', "'cached_input'"),
        ('["m"]\nas_of = "x"\ninput = 1\ncached_input = 1\noutput = 1\nextra = 2\n', "extra"),
        ("m = 3\n", "must be a table"),
        ("[[[", "invalid TOML"),
    ],
)
def test_bad_price_table_names_file_and_field(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(text)
    with pytest.raises(PriceTableError, match=str(path)) as info:
        load_prices(path)
    assert words in str(info.value)


@given(
    uncached=st.integers(0, 10**7),
    cached=st.integers(0, 10**7),
    output=st.integers(0, 10**7),
)
def test_price_is_linear_and_never_negative(uncached: int, cached: int, output: int) -> None:
    price = Price("2026-01-01", 3.0, 0.3, 15.0)
    cost = price.cost(TokenUsage(uncached + cached, cached, output, None))
    assert cost is not None and cost >= 0
    doubled = price.cost(TokenUsage(2 * (uncached + cached), 2 * cached, 2 * output, None))
    assert doubled == pytest.approx(2 * cost)


def test_bad_price_table_stops_the_run_before_any_trial(
    pytester: pytest.Pytester, task_factory: Callable[..., Path]
) -> None:
    task_dir = task_factory("t1", {"a.txt": "x\n"}, {"a.txt": "y\n"})
    prices = pytester.path / "prices.toml"
    prices.write_text('["m1"]\ninput = 1\n')
    result = pytester.runpytest_subprocess(
        "--agent=codex",
        f"--tasks={task_dir}",
        "--agent-opt=bin=/bin/true",
        f"--agentbench-prices={prices}",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--agentbench-prices: {prices}*as_of*"])


def _npm_codex(root: Path, with_native: bool = True) -> Path:
    """An npm install of codex as the package lays it out: a node launcher, a static binary."""
    launcher = root / "node_modules" / "@openai" / "codex" / "bin" / "codex.js"
    launcher.parent.mkdir(parents=True)
    launcher.write_text("#!/usr/bin/env node\n")
    launcher.chmod(0o755)  # npm installs both programs executable
    if with_native:
        vendor = root / "node_modules" / "@openai" / "codex-linux-x64" / "vendor"
        native = vendor / "x86_64-unknown-linux-musl" / "bin" / "codex"
        native.parent.mkdir(parents=True)
        native.write_bytes(b"\x7fELF")
        native.chmod(0o755)
    (root / "node_modules" / ".bin").mkdir()
    (root / "node_modules" / ".bin" / "codex").symlink_to(launcher)
    return root / "node_modules" / ".bin" / "codex"


def test_codex_runs_the_static_binary_behind_the_node_launcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    bin_link = _npm_codex(tmp_path / "with")
    native = native_codex(bin_link)
    assert native.parts[-4:] == ("vendor", "x86_64-unknown-linux-musl", "bin", "codex")
    assert make(CodexAgent, bin=str(bin_link)).binary == str(native)
    without = _npm_codex(tmp_path / "without", with_native=False)
    assert native_codex(without) == without  # no platform package: the launcher still works
    assert native_codex(Path("/bin/true")) == Path("/bin/true")


class _NoNamespaces(TmpProvider):
    """A provider like docker's: programs live elsewhere inside, no nested namespaces."""

    nested_sandbox = False

    def program_path(self, program: str) -> str:
        return "/inside/" + Path(program).name


def test_codex_turns_its_own_sandbox_off_where_namespaces_are_unavailable(
    trial: CliTrial,
) -> None:
    codex = make(CodexAgent)
    codex.use_sandbox(_NoNamespaces(None))
    assert codex.run_binary == "/inside/true"
    assert 'sandbox_mode="danger-full-access"' in codex.command("p", None, trial)
    chosen = make(CodexAgent, sandbox="read-only")
    chosen.use_sandbox(_NoNamespaces(None))
    assert 'sandbox_mode="read-only"' in chosen.command("p", None, trial)
    default, on_host = make(CodexAgent), TmpProvider("/dev/shm")
    default.use_sandbox(on_host)
    assert default.run_binary == "/bin/true"
    assert 'sandbox_mode="workspace-write"' in default.command("p", None, trial)
    assert on_host.home_parent is None  # a real CLI's home stays on disk


@pytest.mark.parametrize(
    ("cls", "opts", "present", "enough"),
    [
        (CodexAgent, {}, "CODEX_API_KEY", True),
        (CodexAgent, {"api_key_env": "GW_KEY"}, "GW_KEY", False),  # codex's own provider
        (CodexAgent, {"base_url": "http://gw/v1", "api_key_env": "GW_KEY"}, "GW_KEY", True),
        (CodexAgent, {"base_url": "http://gw/v1"}, "CODEX_API_KEY", False),
        (ClaudeAgent, {}, "CLAUDE_CODE_OAUTH_TOKEN", True),
        (ClaudeAgent, {"api_key_env": "GW_KEY"}, "GW_KEY", True),
        (OpencodeAgent, {}, "OPENROUTER_API_KEY", True),
        (OpencodeAgent, {"base_url": "http://gw/v1"}, "OPENROUTER_API_KEY", False),
    ],
)
def test_preflight_accepts_only_a_variable_the_cli_reads(
    monkeypatch: pytest.MonkeyPatch,
    cls: type[CliAgent],
    opts: dict[str, str],
    present: str,
    enough: bool,
) -> None:
    for name in {*CodexAgent.credential_env, *ClaudeAgent.credential_env, "GW_KEY"}:
        monkeypatch.delenv(name, raising=False)
    for name in OpencodeAgent.credential_env:
        monkeypatch.delenv(name, raising=False)
    agent = make(cls, **opts)
    monkeypatch.setenv(present, "")  # empty is missing
    with pytest.raises(pytest.UsageError, match=f"--agent={cls.name}: no credentials: set "):
        agent.preflight()
    monkeypatch.setenv(present, SECRET)
    if enough:
        agent.preflight()
    else:
        with pytest.raises(pytest.UsageError, match="no credentials"):
            agent.preflight()


# The wire the meter keeps -------------------------------------------------------------------

WIRE_CLIENT = """
import json, os, sys, urllib.request
body = {"stream": True, "tools": [{"type": "function", "function": {"name": "bash"}}],
        "messages": [{"role": "user", "content": sys.argv[2] + " " + os.environ["WIRE_KEY"]}],
        "max_steps": sys.argv[3]}
request = urllib.request.Request(sys.argv[1] + "/chat/completions", json.dumps(body).encode(),
                                 {"content-type": "application/json"})
urllib.request.urlopen(request).read()
"""


class _WireAgent(CliAgent):
    """A stand-in CLI: one Chat request through the meter per round, carrying the step cap
    it was given."""

    name = "codex"
    default_key_env = "WIRE_KEY"

    def command(self, prompt: str, session_id: str | None, trial: CliTrial) -> list[str]:
        return ["-c", WIRE_CLIENT, trial.wire_url or "", prompt, str(trial.step_limit)]

    def adapter_env(self, trial: CliTrial) -> dict[str, str]:
        return {}

    def parse(self, events: Sequence[Mapping[str, Any]]) -> StreamFacts:
        return StreamFacts()


class _RunSandbox(_Sandbox):
    def run(self, argv: Sequence[str], *, env: Mapping[str, str], timeout: float) -> Any:
        return run_process_group(argv, env=env, cwd=str(self.home), timeout=timeout)


def test_each_metered_round_gets_its_own_wire_lines_kept_outside_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIRE_KEY", SECRET)
    script = {"turns": [{"message": "one"}, {"message": "two"}]}
    with ScriptedModelServer(script) as server:
        opts = {"bin": sys.executable, "base_url": server.openai_base_url}
        agent = _WireAgent(Settings(agent="codex", agent_opts=opts))
        ctx = _Ctx(tmp_path)
        ctx.sandbox = _RunSandbox(tmp_path)
        session = CliSession(agent, ctx)  # type: ignore[arg-type]
        try:
            rounds = [session.run_round(p, i, timeout=60) for i, p in enumerate(("a", "b"))]
            wire_dir = session.wire_dir
        finally:
            session.close()
    assert wire_dir is not None and tmp_path not in wire_dir.parents
    assert not wire_dir.exists()
    lines = [[json.loads(x) for x in r.raw["wire"].splitlines()] for r in rounds]
    assert [[line["index"] for line in round_lines] for round_lines in lines] == [[1], [2]]
    assert lines[1][0]["request"]["messages"][0]["content"] == "b [redacted]"
    assert "data: [DONE]" in lines[1][0]["response"]
    assert all(SECRET not in r.raw["wire"] for r in rounds)


def test_concurrent_sessions_of_one_agent_each_keep_their_own_route_and_step_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both sessions are open before either runs its round: what one trial was told never
    reaches the other."""
    monkeypatch.setenv("WIRE_KEY", SECRET)
    both_open = threading.Barrier(2, timeout=30)

    def trial(name: str, steps: int) -> tuple[str | None, list[dict[str, Any]]]:
        home = tmp_path / name
        home.mkdir()
        ctx = _Ctx(home, max_steps=steps)
        ctx.sandbox = _RunSandbox(home)
        session = CliSession(agent, ctx)  # type: ignore[arg-type]
        try:
            both_open.wait()
            result = session.run_round(name, 0, timeout=60)
            return session.trial.wire_url, [json.loads(x) for x in result.raw["wire"].splitlines()]
        finally:
            session.close()

    with ScriptedModelServer({"turns": [{"message": "done"}] * 2}) as server:
        opts = {"bin": sys.executable, "base_url": server.openai_base_url}
        agent = _WireAgent(Settings(agent="codex", agent_opts=opts))
        with ThreadPoolExecutor(2) as pool:
            (url_a, wire_a), (url_b, wire_b) = pool.map(trial, ["a", "b"], [3, 7])
    assert url_a != url_b and server.openai_base_url not in (url_a, url_b)
    assert [line["request"]["messages"][0]["content"] for line in wire_a] == ["a [redacted]"]
    assert [line["request"]["messages"][0]["content"] for line in wire_b] == ["b [redacted]"]
    assert [wire_a[0]["request"]["max_steps"], wire_b[0]["request"]["max_steps"]] == ["3", "7"]
    assert not hasattr(agent, "wire_url") and not hasattr(agent, "step_limit")
