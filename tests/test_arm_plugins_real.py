"""Arm plugins against the real Claude Code and codex under bwrap, driven by the scripted
model server: the plugin's skill reaches the model request (the CLI loaded the plugin from
the private marketplace or cache), its SessionStart hook ran inside the sandbox (it wrote a
file in the trial's home), and the vanilla trial got neither. opencode is refused before any
trial. Skipped only when the pinned CLI or bwrap is not installed."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from test_arm_delivery_real import AGENTS, ANSWER, KEY_ENV

from pytest_agentbench.agents.base import TrialContext
from pytest_agentbench.sandbox import make_provider
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.arms import VANILLA, Arm, load_arms
from pytest_agentbench.tasks.directory import load_directory_task
from pytest_agentbench.testing.clis import find_cli, missing_reason

from conftest import skip_unless_sandbox, write_task

if TYPE_CHECKING:
    from pytest_agentbench.testing.pytest_plugin import ServerFactory

pytestmark = pytest.mark.real
pytest_plugins = ["pytest_agentbench.testing.pytest_plugin"]


def plugin_arms(root: Path, skill: str) -> dict[str, Arm]:
    """An arm with one plugin: a skill named `skill` and a SessionStart hook that writes
    $HOME/hook-ran (the plugin root it was given, as the CLI sees it)."""
    directory = root / "flow"
    (directory / ".claude-plugin").mkdir(parents=True)
    (directory / ".claude-plugin" / "plugin.json").write_text('{"name": "flow"}')
    (directory / "skills" / "tidy").mkdir(parents=True)
    (directory / "skills" / "tidy" / "SKILL.md").write_text(
        f"---\nname: {skill}\ndescription: Use when tidying.\n---\nTidy.\n"
    )
    hook = {"type": "command", "command": 'echo "${CLAUDE_PLUGIN_ROOT}" > "$HOME/hook-ran"'}
    (directory / "hooks").mkdir()
    (directory / "hooks" / "hooks.json").write_text(
        json.dumps({"hooks": {"SessionStart": [{"matcher": "", "hooks": [hook]}]}})
    )
    (root / "arms.toml").write_text('[arm.flow]\nplugins = ["flow"]\n')
    return {arm.name: arm for arm in load_arms(root / "arms.toml")}


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_the_plugin_skill_reaches_the_request_and_its_hook_runs(
    cli: str,
    tmp_path: Path,
    agentbench_model_server: ServerFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if find_cli(cli) is None:
        pytest.skip(missing_reason(cli))
    skip_unless_sandbox("bwrap")
    skill = f"skill-{uuid.uuid4().hex[:10]}"
    arms = plugin_arms(tmp_path / "arms", skill)
    write_task(tmp_path / "tasks", "notes", {"notes.txt": "hello\n"}, {"notes.txt": "bye\n"})
    task = load_directory_task(tmp_path / "tasks" / "notes")
    monkeypatch.setenv(KEY_ENV, f"sk-scripted-{uuid.uuid4().hex}")
    provider = make_provider(Settings(agent=cli, sandbox="bwrap"))
    seen: dict[str, str] = {}
    hook_ran: dict[str, str | None] = {}
    found: dict[str, list[str] | None] = {}
    events: dict[str, str] = {}
    for name in (VANILLA, "flow"):
        server = agentbench_model_server(ANSWER)
        opts = {
            "bin": str(find_cli(cli)),
            "base_url": server.base_url if cli == "claude" else server.openai_base_url,
            "api_key_env": KEY_ENV,
            "retries": "0",
        }
        settings = Settings(agent=cli, sandbox="bwrap", model="scripted-model", agent_opts=opts)
        agent = AGENTS[cli](settings)
        agent.use_sandbox(provider)
        with provider.create(task, f"notes-{name}-r0") as sandbox:
            session = agent.start(TrialContext(task, 0, 0, sandbox, 0, settings, arms[name]))
            try:
                result = session.run_round(task.prompt, 0, 90)
            finally:
                session.close()
            assert result.exit_code == 0, result.stderr_tail
            mark = sandbox.home / "hook-ran"
            hook_ran[name] = mark.read_text().strip() if mark.exists() else None
            found[name] = agent.plugins_found(sandbox.home)
            events[name] = result.raw.get("events", "")
            inner_home = sandbox.inner_home
        assert server.tool_requests(), f"{cli} sent no model request"
        seen[name] = json.dumps([r.body for r in server.tool_requests()])
    assert f"flow:{skill}" in seen["flow"]  # listed by the CLI as the plugin's skill
    assert skill not in seen[VANILLA]
    assert hook_ran[VANILLA] is None
    # The hook ran in the sandbox, given the installed plugin's root as the CLI sees it.
    assert hook_ran["flow"] is not None and hook_ran["flow"].startswith(inner_home)
    assert hook_ran["flow"].rstrip("/").endswith(("/plugins/flow", "/flow/local"))
    assert found == {VANILLA: [], "flow": ["flow"]}
    if cli == "claude":  # its init event names the plugin as installed from the marketplace
        (init,) = [
            e
            for e in map(json.loads, events["flow"].splitlines())
            if e.get("type") == "system" and e.get("subtype") == "init"
        ]
        assert {"name": "flow", "source": "flow@agentbench"}.items() <= next(
            p for p in init["plugins"] if p["name"] == "flow"
        ).items()
        assert "flow@agentbench" not in events[VANILLA]


def test_opencode_with_a_plugin_arm_is_refused_before_any_trial(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    if find_cli("opencode") is None:
        pytest.skip(missing_reason("opencode"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-used")  # past the credentials check
    plugin_arms(pytester.path / "arms", "tidy")
    write_task(pytester.path / "tasks", "notes", {"notes.txt": "hello\n"}, {"notes.txt": "b\n"})
    result = pytester.runpytest_subprocess(
        "--agent=opencode",
        "--sandbox=tmp",
        f"--tasks={pytester.path / 'tasks'}",
        f"--arms={pytester.path / 'arms' / 'arms.toml'}",
        "-p",
        "no:cacheprovider",
        timeout=60,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stderr.str()
    assert "--arms: [arm.flow] plugins: --agent=opencode cannot install plugin directories" in text
    assert "JavaScript modules" in text and "drop plugins from the arm" in text
