"""A plugin's skills and hooks in the receipt, as each CLI lists them before coding: Claude
Code's skills dialog (source `plugin`, named `plugin:directory`) and hooks listing, codex
app-server's skills/list (a `pluginId`, named `plugin:name`) and hooks/list (source `plugin`,
camel-case events). Declared and seen equal is verified; a declared plugin skill the CLI does
not list, or one it lists that no plugin declares, is a mismatch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_arm_plugins_real import plugin_arms

from pytest_agentbench.agents.claude import ClaudeAgent, read_claude_discovery
from pytest_agentbench.agents.cli_base import read_events
from pytest_agentbench.agents.codex import CodexAgent, read_codex_discovery
from pytest_agentbench.agents.receipts import MISMATCH, VERIFIED, build, expected

EVENTS = Path(__file__).parent / "fixtures" / "events"
HOME = "/tmp/agentbench-trial/home"
SKILL = "tidy-up"  # plugin_arms' skill: directory `tidy`, front matter name SKILL
HOOK = 'flow:SessionStart[]: echo "${CLAUDE_PLUGIN_ROOT}" > "$HOME/hook-ran"'
COMMAND = 'echo "${CLAUDE_PLUGIN_ROOT}" > "$HOME/hook-ran"'
# codex lists the command with the plugin's root in place of ${CLAUDE_PLUGIN_ROOT}.
CODEX_COMMAND = COMMAND.replace(
    "${CLAUDE_PLUGIN_ROOT}", f"{HOME}/.codex/plugins/cache/agentbench/flow/local"
)


def codex_answers(*skills: str) -> list[dict[str, Any]]:
    """The captured codex discovery with these plugin skills and the plugin's hook listed."""
    answers = read_events(EVENTS / "codex" / "discovery.jsonl")
    for answer in answers:
        if answer.get("id") == "skills":
            listed = answer["result"]["data"][0]["skills"]
            listed += [{"name": s, "scope": "user", "pluginId": "flow@agentbench"} for s in skills]
        if answer.get("id") == "hooks":
            answer["result"]["data"][0]["hooks"] = [
                {
                    "eventName": "sessionStart",
                    "matcher": "",
                    "command": CODEX_COMMAND,
                    "source": "plugin",
                    "pluginId": "flow@agentbench",
                }
            ]
    return answers


def claude_answers(*skills: str) -> list[dict[str, Any]]:
    answers = read_events(EVENTS / "claude" / "discovery.jsonl")
    for answer in answers:
        reply = answer.get("response") or {}
        if reply.get("request_id") == "get_skills_dialog":
            listed = reply["response"]["skills"]
            listed += [{"name": s, "source": "plugin", "state": "on"} for s in skills]
        if reply.get("request_id") == "get_hooks_listing":
            reply["response"]["hooks"] = [
                {
                    "event": "SessionStart",
                    "matcher": "",
                    "commandText": COMMAND,
                    "source": "pluginHook",
                    "pluginName": "flow@agentbench",
                }
            ]
    return answers


def test_each_cli_names_a_plugin_skill_its_own_way(tmp_path: Path) -> None:
    flow = plugin_arms(tmp_path, SKILL)["flow"]
    assert expected(flow, ClaudeAgent.delivery, skills_by_dir=True)["plugin_skills"] == [
        "flow:tidy"
    ]
    assert expected(flow, CodexAgent.delivery)["plugin_skills"] == [f"flow:{SKILL}"]
    assert "plugin_skills" not in expected(
        plugin_arms(tmp_path / "v", SKILL)["vanilla"], CodexAgent.delivery
    )


def test_codex_lists_the_plugin_skill_and_hook_apart_from_the_user_ones(tmp_path: Path) -> None:
    flow = plugin_arms(tmp_path, SKILL)["flow"]
    found = read_codex_discovery(codex_answers(f"flow:{SKILL}"), HOME)
    assert found.seen["plugin_skills"] == [f"flow:{SKILL}"]
    assert found.seen["plugin_hooks"] == [HOOK] and found.seen["hooks"] == []
    assert "twice-checker" in (found.seen["skills"] or [])  # the fixture's user skill
    found.seen["skills"] = []  # this arm delivers none of its own
    receipt = build("codex", flow, expected(flow, CodexAgent.delivery), found)
    assert receipt["components"]["plugin_skills"]["status"] == VERIFIED
    assert receipt["components"]["plugin_hooks"]["status"] == VERIFIED


def test_claude_lists_the_plugin_skill_by_its_directory(tmp_path: Path) -> None:
    flow = plugin_arms(tmp_path, SKILL)["flow"]
    found = read_claude_discovery(claude_answers("flow:tidy"), HOME)
    assert found.seen["plugin_skills"] == ["flow:tidy"]
    assert found.seen["plugin_hooks"] == [HOOK]
    found.seen["skills"], found.seen["guidance"] = [], []  # the fixture's arm delivery
    receipt = build("claude", flow, expected(flow, ClaudeAgent.delivery, True), found)
    assert receipt["status"] == VERIFIED, receipt["problems"]


def test_a_hidden_or_an_undeclared_plugin_skill_is_a_mismatch(tmp_path: Path) -> None:
    arms = plugin_arms(tmp_path, SKILL)
    flow, vanilla = arms["flow"], arms["vanilla"]
    hidden = read_codex_discovery(codex_answers(), HOME)
    receipt = build("codex", flow, expected(flow, CodexAgent.delivery), hidden)
    assert receipt["status"] == MISMATCH
    assert f"plugin_skills: declared but not seen ['flow:{SKILL}']" in receipt["problems"]
    extra = read_claude_discovery(claude_answers("flow:tidy", "flow:planted"), HOME)
    receipt = build("claude", flow, expected(flow, ClaudeAgent.delivery, True), extra)
    assert "plugin_skills: seen but not declared ['flow:planted']" in receipt["problems"]
    receipt = build("claude", vanilla, expected(vanilla, ClaudeAgent.delivery, True), extra)
    assert (
        "plugin_skills: seen but not declared ['flow:planted', 'flow:tidy']"
        in (receipt["problems"])
    )
