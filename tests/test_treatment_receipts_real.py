"""Treatment receipts against the real CLIs under bwrap, driven by the scripted model server.

An arm with guidance and a skill: before the first model call, Claude Code's control requests
list exactly the declared skill and memory file (verified, with zero usage and no request on
the wire), codex's app-server lists exactly the declared skill and no guidance listing
(unverified, then found in the first request on the wire). A skill planted in the home that
the arm does not declare stops the trial before any model request. Skipped only when the
pinned CLI or bwrap is not installed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench.agents.base import TrialContext
from pytest_agentbench.agents.claude import DISALLOWED_TOOLS, ClaudeAgent
from pytest_agentbench.agents.cli_base import CliAgent
from pytest_agentbench.agents.codex import CodexAgent
from pytest_agentbench.agents.opencode import OpencodeAgent
from pytest_agentbench.sandbox import make_provider
from pytest_agentbench.sandbox.base import InfrastructureError
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.arms import Arm, load_arms
from pytest_agentbench.tasks.directory import load_directory_task
from pytest_agentbench.testing.clis import PINS, find_cli, missing_reason

from conftest import cli_under_bwrap, skip_unless_sandbox, write_task

if TYPE_CHECKING:
    from pytest_agentbench.testing.pytest_plugin import ServerFactory

pytestmark = pytest.mark.real
pytest_plugins = ["pytest_agentbench.testing.pytest_plugin"]

AGENTS: dict[str, type[CliAgent]] = {
    "codex": CodexAgent,
    "claude": ClaudeAgent,
    "opencode": OpencodeAgent,
}
KEY_ENV = "AGENTBENCH_TEST_KEY"
# The skill's directory is `checker`, its front matter name `twice-checker`: Claude Code names
# a skill by its directory, codex by its name.
SKILL = {"claude": "checker", "codex": "twice-checker"}


@pytest.fixture(params=["claude", "codex"])
def cli(request: pytest.FixtureRequest) -> str:
    return cli_under_bwrap(str(request.param))


@pytest.fixture
def core(tmp_path: Path) -> Arm:
    root = tmp_path / "arms"
    skill = root / "skills" / "checker"
    skill.mkdir(parents=True)
    (root / "core.md").write_text(f"Answer with the word guide-{uuid.uuid4().hex[:10]}.\n")
    (skill / "SKILL.md").write_text(
        "---\nname: twice-checker\ndescription: Use when checking a file twice.\n---\nBody.\n"
    )
    (root / "arms.toml").write_text(
        '[arm.core]\nguidance = ["core.md"]\nskills = ["skills/checker"]\n'
    )
    return next(a for a in load_arms(root / "arms.toml") if a.name == "core")


def run(
    cli: str,
    arm: Arm,
    tmp_path: Path,
    server_base: str,
    monkeypatch: pytest.MonkeyPatch,
    plant: str | None = None,
    tamper: Callable[[Path], None] | None = None,
) -> dict[str, Any] | None:
    """One metered trial round of cli in arm under bwrap; its receipt. `plant` names a skill
    put into the home's skills folder besides the arm's; `tamper` is given the trial's home
    once the trial has started, before discovery."""
    monkeypatch.setenv(KEY_ENV, f"sk-scripted-{uuid.uuid4().hex}")
    write_task(tmp_path / "tasks", "notes", {"notes.txt": "hello\n"}, {"notes.txt": "bye\n"})
    task = load_directory_task(tmp_path / "tasks" / "notes")
    opts = {"bin": str(find_cli(cli)), "base_url": server_base, "api_key_env": KEY_ENV}
    if cli != "opencode":
        opts["retries"] = "0"
    settings = Settings(agent=cli, sandbox="bwrap", model="scripted-model", agent_opts=opts)
    provider = make_provider(settings)
    agent = AGENTS[cli](settings)
    agent.use_sandbox(provider)
    with provider.create(task, f"notes-{arm.name}") as sandbox:
        session = agent.start(TrialContext(task, 0, 0, sandbox, 0, settings, arm))
        if plant is not None and agent.delivery and agent.delivery.skills:
            folder = sandbox.home / agent.delivery.skills / plant
            folder.mkdir(parents=True)
            (folder / "SKILL.md").write_text(
                f"---\nname: {plant}\ndescription: Use when planted.\n---\n"
            )
        if tamper is not None:
            tamper(sandbox.home)
        try:
            result = session.run_round(task.prompt, 0, 90)
            assert result.exit_code == 0, result.stderr_tail
            assert result.infra_failure is None
        finally:
            session.close()
        return session.receipt


def test_the_receipt_shows_exactly_the_declared_components(
    cli: str,
    core: Arm,
    tmp_path: Path,
    agentbench_model_server: ServerFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = agentbench_model_server({"turns": [{"message": "Nothing to change."}]})
    base = server.base_url if cli == "claude" else server.openai_base_url
    receipt = run(cli, core, tmp_path, base, monkeypatch)
    assert receipt is not None
    assert receipt["problems"] == []
    assert receipt["status"] == "verified"
    parts = receipt["components"]
    assert parts["skills"] == {
        "expected": [SKILL[cli]],
        "seen": [SKILL[cli]],
        "status": "verified",
    }
    assert parts["hooks"]["status"] == "verified"
    assert receipt["discovery"]["cli_version"] == PINS[cli].version
    assert receipt["discovery"]["wire_requests"] == 0  # no model call before coding
    assert receipt["after"]["delivered_unchanged"] is True
    guidance = parts["guidance"]
    if cli == "claude":
        assert guidance == {
            "expected": ["~/.claude/CLAUDE.md"],
            "seen": ["~/.claude/CLAUDE.md"],
            "status": "verified",
        }
        assert receipt["discovery"]["model_calls"] == 0
        assert receipt["other"]["auto_memory"] == ["off"]
        assert receipt["after"]["skills"] == [SKILL[cli]]
        assert receipt["after"]["cli_version_match"] is True
        tools = set(receipt["after"]["reported"]["tools"])
        assert "Bash" in tools and "Task" in tools  # subagents stay on by default
        assert not tools & set(DISALLOWED_TOOLS)  # the launch's disallowed tools are gone
    else:  # codex lists no instruction file: the first request shows it
        assert guidance["seen"] is None
        assert guidance["status"] == "verified_on_wire"
        assert receipt["wire"] == "first request checked"
        assert receipt["builtin"]["skills"]  # codex's .system skills, apart


def test_an_undeclared_skill_in_the_home_stops_the_trial_before_any_request(
    cli: str,
    core: Arm,
    tmp_path: Path,
    agentbench_model_server: ServerFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = agentbench_model_server({"turns": [{"message": "Nothing to change."}]})
    base = server.base_url if cli == "claude" else server.openai_base_url
    with pytest.raises(InfrastructureError) as caught:
        run(cli, core, tmp_path, base, monkeypatch, plant="stowaway")
    assert caught.value.cause == "treatment_mismatch"
    assert "seen but not declared ['stowaway']" in str(caught.value)
    assert server.requests == []


def test_subagents_off_takes_the_subagent_tool_from_claude_code(
    tmp_path: Path, agentbench_model_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    if find_cli("claude") is None:
        pytest.skip(missing_reason("claude"))
    skip_unless_sandbox("bwrap")
    (tmp_path / "arms.toml").write_text("[capabilities]\nsubagents = false\n")
    vanilla = load_arms(tmp_path / "arms.toml")[0]
    server = agentbench_model_server({"turns": [{"message": "Nothing to change."}]})
    receipt = run("claude", vanilla, tmp_path, server.base_url, monkeypatch)
    assert receipt is not None and receipt["status"] == "verified"
    assert receipt["capabilities"]["subagents"] == {
        "value": False,
        "enforced_by": "--disallowedTools Agent,Task",
    }
    tools = set(receipt["after"]["reported"]["tools"])
    assert "Bash" in tools and "Task" not in tools and "Agent" not in tools


def test_a_cli_without_a_listing_is_unverified_and_settled_on_the_wire(
    core: Arm,
    tmp_path: Path,
    agentbench_model_server: ServerFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """opencode offers no listing: its guidance and skill are found in the first request."""
    if find_cli("opencode") is None:
        pytest.skip(missing_reason("opencode"))
    skip_unless_sandbox("bwrap")
    server = agentbench_model_server({"turns": [{"message": "Nothing to change."}]})
    receipt = run("opencode", core, tmp_path, server.openai_base_url, monkeypatch)
    assert receipt is not None
    assert receipt["discovery"]["method"] == "none: this CLI offers no listing"
    parts = receipt["components"]
    assert parts["guidance"]["status"] == parts["skills"]["status"] == "verified_on_wire"
    assert parts["hooks"]["status"] == "unverified"  # nothing declared: no proof either way
    assert receipt["status"] == "unverified" and receipt["problems"] == []
