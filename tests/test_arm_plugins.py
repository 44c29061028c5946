"""Arm plugins: admission by PluginBench's rules (each rule a planted problem and its message),
the components a plugin declares, the arm's identity over its bytes, and refusal for an agent
that cannot install plugin directories."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from pytest_agentbench.agents.base import check_delivery
from pytest_agentbench.agents.delivery import Places, write_delivery
from pytest_agentbench.agents.opencode import OpencodeAgent
from pytest_agentbench.agents.plugins import codex_args, install_claude
from pytest_agentbench.tasks.arms import Arm, ArmsError, load_arms
from pytest_agentbench.tasks.plugins import components

SKILL = "---\nname: tidy\ndescription: Use when tidying.\n---\nBody.\n"
HOOKS = {
    "hooks": {"SessionStart": [{"matcher": "", "hooks": [{"type": "command", "command": "true"}]}]}
}
ARMS = '[arm.flow]\nplugins = ["flow"]\n'


def plugin(root: Path, name: str = "flow", hooks: dict | None = None) -> Path:
    """A valid plugin: manifest, a skill, an agent and a SessionStart hook."""
    directory = root / name
    (directory / ".claude-plugin").mkdir(parents=True)
    (directory / ".claude-plugin" / "plugin.json").write_text(
        json.dumps({"name": name, "version": "1.0.0"})
    )
    (directory / "skills" / "tidy").mkdir(parents=True)
    (directory / "skills" / "tidy" / "SKILL.md").write_text(SKILL)
    (directory / "skills" / "tidy" / "run.sh").write_text("#!/bin/sh\n")
    (directory / "skills" / "tidy" / "run.sh").chmod(0o755)
    (directory / "agents").mkdir()
    (directory / "agents" / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews.\n---\nBe strict.\n"
    )
    (directory / "hooks").mkdir()
    (directory / "hooks" / "hooks.json").write_text(json.dumps(hooks or HOOKS))
    return directory


def error(root: Path, text: str = ARMS) -> str:
    (root / "arms.toml").write_text(text)
    with pytest.raises(ArmsError) as caught:
        load_arms(root / "arms.toml")
    message = str(caught.value)
    assert message.startswith(f"{root / 'arms.toml'}: [arm.flow] plugins: "), message
    return message


def loaded(root: Path, text: str = ARMS) -> Arm:
    (root / "arms.toml").write_text(text)
    return load_arms(root / "arms.toml")[1]


def test_a_plugin_is_kept_whole_and_lists_what_it_declares(tmp_path):
    directory = plugin(tmp_path)
    (directory / ".git").mkdir()
    (directory / ".git" / "HEAD").write_text("ref\n")
    (directory / "bin").mkdir()
    (directory / "bin" / "tool").write_text("x")
    arm = loaded(tmp_path)
    (flow,) = arm.plugins
    assert flow.name == "flow"
    rels = [f.rel for f in flow.files]
    assert "bin/tool" in rels and "skills/tidy/run.sh" in rels
    assert not any(r.startswith(".git/") for r in rels)  # Git internals are left out
    assert next(f.mode for f in flow.files if f.rel == "skills/tidy/run.sh") == 0o755
    assert components(flow) == {
        "skills": ["flow:tidy"],
        "commands": [],
        "agents": ["flow:reviewer"],
        "hooks": ["SessionStart[]: true"],
    }


def test_identity_covers_every_plugin_byte_and_mode(tmp_path):
    directory = plugin(tmp_path)
    first = loaded(tmp_path).identity
    (directory / "skills" / "tidy" / "run.sh").chmod(0o644)
    second = loaded(tmp_path).identity
    (directory / "bin").mkdir()
    (directory / "bin" / "x").write_text("")
    third = loaded(tmp_path).identity
    assert len({first, second, third, Arm("flow").identity}) == 4
    # Delivered under its manifest name: the folder it came from is no delivered byte.
    directory.rename(tmp_path / "elsewhere")
    assert loaded(tmp_path, '[arm.flow]\nplugins = ["elsewhere"]\n').identity == third


def test_manifest_skills_and_hooks_paths_are_read_besides_the_defaults(tmp_path):
    directory = plugin(tmp_path)
    (directory / "extra" / "lint").mkdir(parents=True)
    (directory / "extra" / "lint" / "SKILL.md").write_text(SKILL.replace("tidy", "lint"))
    more = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo stop"}]}]}}
    (directory / "more-hooks.json").write_text(json.dumps(more))
    manifest = {"name": "flow", "skills": ["./extra"], "hooks": "./more-hooks.json"}
    (directory / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
    listed = components(loaded(tmp_path).plugins[0])
    assert listed["skills"] == ["flow:tidy", "flow:lint"]  # skills/ is always scanned
    assert listed["hooks"] == ["SessionStart[]: true", "Stop[]: echo stop"]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _hook(**handler: object) -> str:
    return json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}})


# (what to plant, relative to the plugin; its text; the message it gets)
PLANTED = [
    (".claude-plugin/plugin.json", "{", "plugin.json is not JSON"),
    (".claude-plugin/plugin.json", '{"name": "Flow"}', "name must be kebab-case"),
    (
        ".claude-plugin/plugin.json",
        '{"name": "flow", "skils": []}',
        "key `skils` is not admitted (did you mean `skills`?)",
    ),
    (
        ".claude-plugin/plugin.json",
        '{"name": "flow", "agents": "./agents"}',
        "the manifest agents field is not supported",
    ),
    (
        ".claude-plugin/plugin.json",
        '{"name": "flow", "mcpServers": {}}',
        "MCP servers are not supported; remove `mcpServers`",
    ),
    (
        ".claude-plugin/plugin.json",
        '{"name": "flow", "skills": "../elsewhere"}',
        "skills '../elsewhere' leaves the plugin",
    ),
    ("plugin.json", "{}", "only .claude-plugin/plugin.json is read; move the manifest there"),
    ("commands/go.md", "Go.\n", "commands are not supported"),
    ("workflows/x.md", "", "workflows are not supported"),
    ("output-styles/x.md", "", "output styles are not supported"),
    ("monitors/x.json", "", "monitors are not supported"),
    (".mcp.json", "{}", "MCP servers are not supported"),
    (".lsp.json", "{}", "LSP servers are not supported"),
    ("settings.json", "{}", "plugin settings are not supported"),
    ("SKILL.md", SKILL, "a plugin is not a skill"),
    (".env", "TOKEN=x\n", ".env is a dotenv file; remove it"),
    ("skills/tidy/prod.env", "TOKEN=x\n", "prod.env is a dotenv file"),
    (
        "skills/tidy/SKILL.md",
        SKILL.replace("name: tidy", "name: tidy\nmodel: opus"),
        "skill key `model` is not admitted",
    ),
    (
        "skills/tidy/SKILL.md",
        SKILL.replace("name: tidy", "name: tidy\nhooks: x"),
        "skill key `hooks` is not admitted",
    ),
    (
        "skills/tidy/SKILL.md",
        SKILL.replace("name: tidy", "name: tidy\nuser-invocable: yes"),
        "user-invocable is 'yes'; write true or false",
    ),
    (
        "skills/tidy/SKILL.md",
        SKILL.replace("name: tidy", "name: tidy\npaths: []"),
        "paths is not a list of nonempty globs",
    ),
    ("skills/tidy/SKILL.md", "no front matter\n", "SKILL.md has no front matter"),
    ("skills/other/README.md", "", "other/SKILL.md is missing"),
    ("agents/sub/x.md", "", "sub is not a .md file directly in agents/"),
    ("agents/notes.txt", "", "notes.txt is not a .md file directly in agents/"),
    (
        "agents/reviewer.md",
        "---\nname: reviewer\ndescription: R.\nmodel: opus\n---\n",
        "agent key `model` is not admitted",
    ),
    (
        "agents/reviewer.md",
        "---\nname: Reviewer\ndescription: R.\n---\n",
        "needs a kebab-case name and a description",
    ),
    (
        "hooks/hooks.json",
        '{"hooks": {}, "matchers": 1}',
        "key `matchers` is not admitted; keep only hooks and description",
    ),
    (
        "hooks/hooks.json",
        '{"hooks": {"SessionStrat": []}}',
        "'SessionStrat' is no hook event (did you mean `SessionStart`?)",
    ),
    (
        "hooks/hooks.json",
        _hook(type="prompt", prompt="x"),
        "hook of type 'prompt' is not supported",
    ),
    (
        "hooks/hooks.json",
        _hook(type="command", command="x", **{"async": True}),
        "hook key `async` is asynchronous: not supported",
    ),
    (
        "hooks/hooks.json",
        _hook(type="command", command="echo ${CLAUDE_PLUGIN_DATA}"),
        "names ${CLAUDE_PLUGIN_DATA}",
    ),
    (
        "hooks/hooks.json",
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "Bash.*", "hooks": [{"type": "command", "command": "x"}]}
                    ]
                }
            }
        ),
        "matcher 'Bash.*' is not exact names",
    ),
    ("hooks/hooks.json", "[", "hooks.json is not a JSON hooks file"),
]


@pytest.mark.parametrize(("rel", "text", "expected"), PLANTED, ids=[p[2][:40] for p in PLANTED])
def test_each_admission_rule_names_the_plugin_path_and_the_fix(tmp_path, rel, text, expected):
    _write(plugin(tmp_path) / rel, text)
    message = error(tmp_path)
    assert expected in message
    assert message.rsplit("; ", 1)[1].strip()  # and a fix after the problem


def test_an_empty_agents_folder_and_a_missing_manifest_are_refused(tmp_path):
    directory = plugin(tmp_path)
    for entry in (directory / "agents").iterdir():
        entry.unlink()
    assert "agents is empty; remove it or add an agent .md file" in error(tmp_path)
    (directory / "agents").rmdir()
    (directory / ".claude-plugin" / "plugin.json").unlink()
    assert "plugin.json is missing; add a manifest with at least a name" in error(tmp_path)


def test_symlinks_and_special_files_in_a_plugin_are_refused(tmp_path):
    directory = plugin(tmp_path)
    (directory / "link").symlink_to(directory / "skills")
    assert "link is a symlink; copy the real file in" in error(tmp_path)
    (directory / "link").unlink()
    os.mkfifo(directory / "pipe")
    assert "pipe is not a regular file; remove it from the plugin" in error(tmp_path)
    (directory / "pipe").unlink()
    (tmp_path / "alias").symlink_to(directory)
    assert "alias is not a directory" in error(tmp_path, '[arm.flow]\nplugins = ["alias"]\n')
    assert "nowhere does not exist; fix the path" in error(
        tmp_path, '[arm.flow]\nplugins = ["nowhere"]\n'
    )


def test_a_hook_twice_with_one_event_and_command_is_refused_even_across_plugins(tmp_path):
    plugin(tmp_path / "a")
    plugin(tmp_path / "b", name="other")
    message = error(tmp_path, '[arm.flow]\nplugins = ["a/flow", "b/other"]\n')
    assert "two SessionStart hooks run 'true'; keep one" in message
    plugin(tmp_path / "c")
    message = error(tmp_path, '[arm.flow]\nplugins = ["a/flow", "c/flow"]\n')
    assert "two plugins are named flow; rename one" in message


def test_opencode_is_refused_naming_the_arm_the_key_and_why(tmp_path):
    plugin(tmp_path)
    arms = load_arms(_arms(tmp_path))
    with pytest.raises(pytest.UsageError) as caught:
        check_delivery(OpencodeAgent.__new__(OpencodeAgent), arms)
    text = str(caught.value)
    assert text.startswith("--arms: [arm.flow] plugins: --agent=opencode cannot install plugin")
    assert "plugins are JavaScript modules" in text and "drop plugins from the arm" in text


def _arms(root: Path) -> Path:
    (root / "arms.toml").write_text(ARMS)
    return root / "arms.toml"


def test_claude_gets_a_local_marketplace_and_codex_its_cache_and_flags(tmp_path):
    plugin(tmp_path)
    arm = load_arms(_arms(tmp_path))[1]
    home = tmp_path / "home"
    write_delivery(arm, home, Places(plugins=".claude/agentbench-marketplace/plugins/{name}"))
    install_claude(arm.plugins, home / ".claude", "/inner/.claude")
    market = home / ".claude" / "agentbench-marketplace"
    assert (market / "plugins" / "flow" / ".claude-plugin" / "plugin.json").is_file()
    listed = json.loads((market / ".claude-plugin" / "marketplace.json").read_text())
    assert listed["plugins"] == [{"name": "flow", "source": "./plugins/flow"}]
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["extraKnownMarketplaces"]["agentbench"]["source"] == {
        "source": "directory",
        "path": "/inner/.claude/agentbench-marketplace",
    }
    assert settings["enabledPlugins"] == {"flow@agentbench": True}
    assert codex_args(arm.plugins) == [
        "-c",
        'plugins={"flow@agentbench"={enabled=true}}',
        "--dangerously-bypass-hook-trust",
    ]
    assert codex_args(()) == []


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_command_agent_run_receives_the_plugin_whole_and_the_report_says_so(
    pytester, monkeypatch, workers
):
    """The command agent finds the plugin tree under $AGENTBENCH_PLUGINS_DIR in its home
    (vanilla finds no variable); both trials solve the task, so nothing landed in the
    workspace; each trial and the arms block record the plugins installed."""
    from conftest import write_task

    write_task(pytester.path / "tasks", "t", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    plugin(pytester.path)
    (pytester.path / "arms.toml").write_text(ARMS)
    out = pytester.path / "out"
    out.mkdir()
    monkeypatch.setenv("OUT", str(out))
    script = (
        "import json, os; e = os.environ; p = e.get('AGENTBENCH_PLUGINS_DIR'); "
        "tree = sorted(os.path.relpath(os.path.join(d, f), p) for d, _, fs in os.walk(p) "
        "for f in fs) if p else None; "
        "json.dump({'tree': tree, 'in_home': (p or e['HOME']).startswith(e['HOME'])}, "
        "open(os.path.join(e['OUT'], str(os.getpid())), 'w')); "
        "open('a.txt', 'w').write('2\\n')"
    )
    result = pytester.runpytest_subprocess(
        "--agent=command",
        "--sandbox=tmp",
        f'--agent-cmd={sys.executable} -c "{script}"',
        "--agent-opt=env=OUT",
        f"--tasks={pytester.path / 'tasks'}",
        f"--arms={pytester.path / 'arms.toml'}",
        "--agentbench-json=report.json",
        f"-n{workers}",
        "-v",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=2)
    seen = sorted((json.loads(p.read_text()) for p in out.iterdir()), key=lambda s: bool(s["tree"]))
    assert seen[0] == {"tree": None, "in_home": True}
    assert seen[1]["in_home"] and seen[1]["tree"] == [
        "flow/.claude-plugin/plugin.json",
        "flow/agents/reviewer.md",
        "flow/hooks/hooks.json",
        "flow/skills/tidy/SKILL.md",
        "flow/skills/tidy/run.sh",
    ]
    report = json.loads((pytester.path / "report.json").read_text())
    found = {o["arm"]: o.get("plugins_found", "absent") for o in report["observations"]}
    assert found == {"vanilla": "absent", "flow": ["flow"]}
    rows = {row["arm"]: row["plugins_found"] for row in report["arms"]["arms"]}
    assert rows == {"vanilla": None, "flow": ["flow"]}
    assert report["arms"]["delivery"]["plugins"] == "~/plugins/{name}"
    result.stdout.fnmatch_lines(["*plugins installed in the homes: flow: flow*"])


def test_the_adapters_tell_the_cli_of_a_trials_plugins_and_of_none_without(tmp_path):
    """codex's every round (resumed ones too) enables the plugins and lets their hooks run;
    Claude Code's settings name the marketplace at the home's path inside the sandbox."""
    from pytest_agentbench.agents.claude import ClaudeAgent
    from pytest_agentbench.agents.cli_base import CliTrial
    from pytest_agentbench.agents.codex import CodexAgent
    from pytest_agentbench.settings import Settings

    plugin(tmp_path)
    arm = load_arms(_arms(tmp_path))[1]
    home = tmp_path / "home"
    home.mkdir()
    with_plugins = CliTrial(home, "/sandbox/home", plugins=arm.plugins)
    settings = Settings(agent="codex", agent_opts={"bin": "/bin/true"})
    codex = CodexAgent(settings)
    for session in (None, "thread-1"):
        argv = codex.command("go", session, with_plugins)
        assert argv[argv.index("--") - 3 : argv.index("--")] == codex_args(arm.plugins)
    assert "--dangerously-bypass-hook-trust" not in codex.command("go", None, CliTrial(home, "/x"))
    claude = ClaudeAgent(Settings(agent="claude", agent_opts={"bin": "/bin/true"}))
    claude.prepare(CliTrial(home, "/sandbox/home"))
    assert not (home / ".claude" / "settings.json").exists()  # vanilla: no settings written
    claude.prepare(with_plugins)
    written = json.loads((home / ".claude" / "settings.json").read_text())
    path = written["extraKnownMarketplaces"]["agentbench"]["source"]["path"]
    assert path == "/sandbox/home/.claude/agentbench-marketplace"
