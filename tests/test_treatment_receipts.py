"""Treatment receipts from the pinned CLIs' own discovery answers, and the arms file's
[capabilities] with the switches that enforce them.

The discovery fixtures are real answers of Claude Code 2.1.332 (stream-json control requests)
and codex 0.171.0 (app-server JSON-RPC), captured offline with a home holding one skill
(directory `checker`, name `twice-checker`) and a user instruction file, and a workspace
holding a project instruction file; only the temporary paths were renamed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentbench.agents.base import check_delivery
from pytest_agentbench.agents.claude import ClaudeAgent, read_claude_discovery, reported_by_init
from pytest_agentbench.agents.cli_base import CliTrial, read_events
from pytest_agentbench.agents.codex import CodexAgent, read_codex_discovery
from pytest_agentbench.agents.delivery import write_delivery
from pytest_agentbench.agents.opencode import OpencodeAgent
from pytest_agentbench.agents.receipts import (
    MISMATCH,
    UNVERIFIED,
    VERIFIED,
    build,
    check_after,
    check_wire,
    delivered_hashes,
    expected,
)
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.arms import Arm, ArmsError, Capabilities, load_arms

EVENTS = Path(__file__).parent / "fixtures" / "events"
HOME = "/tmp/agentbench-trial/home"


def arms_with(tmp_path: Path, body: str, head: str = "") -> dict[str, Arm]:
    skill = tmp_path / "skills" / "checker"
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(
        "---\nname: twice-checker\ndescription: Use when checking a file twice.\n---\nBody.\n"
    )
    (tmp_path / "core.md").write_text("Answer briefly.\n")
    (tmp_path / "arms.toml").write_text(head + body)
    return {a.name: a for a in load_arms(tmp_path / "arms.toml")}


CORE = '[arm.core]\nguidance = ["core.md"]\nskills = ["skills/checker"]\n'


def claude_found():
    return read_claude_discovery(read_events(EVENTS / "claude" / "discovery.jsonl"), HOME)


def codex_found():
    return read_codex_discovery(read_events(EVENTS / "codex" / "discovery.jsonl"))


def test_claude_code_lists_the_user_skill_and_memory_file_apart_from_its_own(tmp_path):
    found = claude_found()
    assert found.error is None
    assert found.cli_version == "2.1.332"
    assert found.seen == {
        "guidance": ["~/.claude/CLAUDE.md"],
        "skills": ["checker"],
        "plugin_skills": [],
        "hooks": [],
        "plugin_hooks": [],
    }
    assert found.model_calls == 0  # get_usage: nothing spent
    assert found.other["guidance"] == ["/tmp/agentbench-trial/ws/CLAUDE.md (project)"]
    assert "code-review" in found.builtin["commands"] and "checker" not in found.builtin["commands"]
    assert "general-purpose" in found.builtin["agents"]
    core = arms_with(tmp_path, CORE)["core"]
    want = expected(core, ClaudeAgent.delivery, skills_by_dir=True)
    receipt = build("claude", core, want, found)
    assert receipt["status"] == VERIFIED and receipt["problems"] == []


def test_a_plugin_hook_no_arm_declares_is_a_mismatch(tmp_path):
    """A plugin's hook in the home of an arm without plugins: the kind is checked anyway."""
    found = claude_found()
    found.seen["plugin_hooks"] = ["flow:SessionStart[]: touch x"]
    core = arms_with(tmp_path, CORE)["core"]
    receipt = build("claude", core, expected(core, ClaudeAgent.delivery, True), found)
    assert receipt["status"] == MISMATCH
    assert receipt["problems"] == [
        "plugin_hooks: seen but not declared ['flow:SessionStart[]: touch x']"
    ]


def test_a_skill_the_arm_does_not_declare_or_a_missing_one_is_a_mismatch(tmp_path):
    found = claude_found()
    vanilla = arms_with(tmp_path, CORE)["vanilla"]
    receipt = build("claude", vanilla, expected(vanilla, ClaudeAgent.delivery, True), found)
    assert receipt["status"] == MISMATCH
    assert receipt["problems"] == [
        "guidance: seen but not declared ['~/.claude/CLAUDE.md']",
        "skills: seen but not declared ['checker']",
    ]
    other = arms_with(tmp_path / "b", '[arm.core]\nskills = ["skills/checker"]\n')["core"]
    found.seen["skills"] = []
    receipt = build("claude", other, expected(other, ClaudeAgent.delivery, True), found)
    assert "skills: declared but not seen ['checker']" in receipt["problems"]


def test_codex_lists_skills_by_name_and_no_guidance_which_the_wire_settles(tmp_path):
    found = codex_found()
    assert found.error is None and found.cli_version == "0.171.0"
    assert found.seen == {
        "guidance": None,
        "skills": ["twice-checker"],
        "plugin_skills": [],
        "hooks": [],
        "plugin_hooks": [],
    }
    assert "skill-creator" in found.builtin["skills"]  # codex's .system skills, apart
    core = arms_with(tmp_path, CORE)["core"]
    receipt = build("codex", core, expected(core, CodexAgent.delivery), found)
    assert receipt["status"] == UNVERIFIED
    assert receipt["components"]["guidance"]["status"] == UNVERIFIED
    assert receipt["components"]["skills"]["status"] == VERIFIED
    request = {"input": [{"content": [{"text": "# AGENTS.md\n<INSTRUCTIONS>\nAnswer briefly.\n"}]}]}
    title = {"has_tools": False, "request": {"input": "Name this session."}}
    wire = json.dumps(title) + "\n" + json.dumps({"has_tools": True, "request": request}) + "\n"
    shown = json.loads(json.dumps(receipt))
    check_wire(shown, core, wire)
    assert shown["status"] == VERIFIED
    assert shown["components"]["guidance"]["status"] == "verified_on_wire"
    check_wire(receipt, core, json.dumps({"request": {"input": "other text"}}) + "\n")
    assert receipt["status"] == MISMATCH
    assert receipt["components"]["guidance"]["status"] == "missing_on_wire"


def test_without_a_recorded_wire_an_unverified_kind_stays_unverified(tmp_path):
    core = arms_with(tmp_path, CORE)["core"]
    receipt = build("codex", core, expected(core, CodexAgent.delivery), codex_found())
    check_wire(receipt, core, None)
    assert receipt["status"] == UNVERIFIED and receipt["wire"] == "no request recorded"


def test_a_failed_control_request_or_a_missing_answer_is_a_discovery_error():
    answers = read_events(EVENTS / "claude" / "discovery.jsonl")
    assert read_claude_discovery(answers[:2], HOME).error == (
        "no answer to get_memory_dialog, get_hooks_listing, agentbench-discovery-end"
    )
    failed = {"type": "control_response", "response": {"subtype": "error", "request_id": "x"}}
    assert read_claude_discovery([failed], HOME).error == "x: None"
    assert "no answer to" in (read_codex_discovery([]).error or "")
    answers = read_events(EVENTS / "codex" / "discovery.jsonl")
    plugins_failed = [
        {"id": a["id"], "error": {"message": "catalog out of reach"}}
        if a.get("id") == "agentbench-discovery-end"
        else a
        for a in answers
    ]
    found = read_codex_discovery(plugins_failed)  # plugins are only recorded: noted, not fatal
    assert found.error is None and found.seen["skills"] == ["twice-checker"]
    assert found.other["plugin_list_error"] == ["{'message': 'catalog out of reach'}"]


def test_after_coding_the_init_event_and_the_delivered_hashes_are_recorded(tmp_path):
    core = arms_with(tmp_path, CORE)["core"]
    home = tmp_path / "home"
    write_delivery(core, home, ClaudeAgent.delivery)
    before = delivered_hashes(core, home, ClaudeAgent.delivery)
    assert sorted(before) == ["~/.claude/CLAUDE.md", "~/.claude/skills/checker/SKILL.md"]
    receipt = build("claude", core, expected(core, ClaudeAgent.delivery, True), claude_found())
    init = json.loads((EVENTS / "claude" / "success.jsonl").read_text().splitlines()[0])
    init["skills"] = [*init["skills"], "checker"]
    (home / ".claude" / "skills" / "checker" / "SKILL.md").write_text("changed\n")
    after_hashes = delivered_hashes(core, home, ClaudeAgent.delivery)
    check_after(receipt, before, after_hashes, reported_by_init([init]))
    after = receipt["after"]
    assert after["skills"] == ["checker"] and after["skills_match"] is True
    assert after["cli_version_match"] is True
    assert after["delivered_unchanged"] is False
    assert after["delivered_changed"] == ["~/.claude/skills/checker/SKILL.md"]


def test_capabilities_apply_to_every_arm_and_join_the_identity(tmp_path):
    plain = arms_with(tmp_path / "a", CORE)
    capped = arms_with(tmp_path / "b", CORE, "[capabilities]\nsubagents = true\nmax_threads = 2\n")
    assert all(a.capabilities == Capabilities(True, 2) for a in capped.values())
    assert plain["vanilla"].configuration_fields() == {}
    assert capped["vanilla"].configuration_fields() == {"capabilities": '{"max_threads": 2}'}
    assert capped["core"].identity == plain["core"].identity  # the same bytes delivered
    assert capped["core"].configuration_fields() != plain["core"].configuration_fields()
    default = arms_with(tmp_path / "c", CORE, "[capabilities]\nsubagents = true\n")
    assert default["vanilla"].configuration_fields() == {}  # the defaults pool with a plain run


@pytest.mark.parametrize(
    ("head", "message"),
    [
        ("[capabilities]\nmax_thread = 2\n", "(did you mean `max_threads`?)"),
        ("[capabilities]\nsubagents = 1\n", "subagents: 1 is not true or false"),
        ("[capabilities]\nmax_threads = 0\n", "max_threads: must be a whole number >= 1"),
        ("[capabilities]\nsubagents = false\nmax_threads = 2\n", "set with subagents = false"),
        ("[capability]\nsubagents = false\n", "(did you mean `capabilities`?)"),
    ],
)
def test_bad_capabilities_are_named_with_their_fix(tmp_path, head, message):
    with pytest.raises(ArmsError, match=None) as caught:
        arms_with(tmp_path, CORE, head)
    assert message in str(caught.value)
    assert "arms.toml" in str(caught.value)


def agent(cls, tmp_path: Path):
    fake = tmp_path / "cli"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    return cls(Settings(agent=cls.name, model="m-1", agent_opts={"bin": str(fake)}))


def test_an_agent_that_cannot_enforce_a_capability_is_refused_before_any_trial(tmp_path):
    arms = arms_with(tmp_path, CORE, "[capabilities]\nmax_threads = 2\n").values()
    with pytest.raises(pytest.UsageError, match=r"\[capabilities\] max_threads: --agent=opencode"):
        check_delivery(agent(OpencodeAgent, tmp_path), arms)
    check_delivery(agent(ClaudeAgent, tmp_path), arms)
    check_delivery(agent(CodexAgent, tmp_path), arms)


def trial(tmp_path: Path, caps: Capabilities) -> CliTrial:
    return CliTrial(tmp_path, str(tmp_path), "http://127.0.0.1:9", None, capabilities=caps)


def test_claude_code_launches_with_the_pinned_switches_and_the_capabilities(tmp_path):
    claude = agent(ClaudeAgent, tmp_path)
    argv = claude.command("go", None, trial(tmp_path, Capabilities()))
    denied = argv[argv.index("--disallowedTools") + 1].split(",")
    assert denied == ["RemoteTrigger", "CronCreate", "ScheduleWakeup", "SendMessage", "Workflow"]
    assert "--include-hook-events" in argv
    env = claude.adapter_env(trial(tmp_path, Capabilities(True, 3)))
    assert env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"
    assert env["CLAUDE_CODE_DISABLE_BACKGROUND_TASKS"] == "1"
    assert env["CLAUDE_CODE_SUBAGENT_MODEL"] == "m-1"
    assert env["CLAUDE_CODE_SUBAGENT_MODEL_FORCE"] == "1"
    assert env["CLAUDE_CODE_MAX_CONCURRENT_SUBAGENTS"] == "3"
    off = claude.command("go", None, trial(tmp_path, Capabilities(False)))
    assert off[off.index("--disallowedTools") + 1].endswith(",Agent,Task")
    assert "CLAUDE_CODE_MAX_CONCURRENT_SUBAGENTS" not in claude.adapter_env(
        trial(tmp_path, Capabilities())
    )


def test_codex_enforces_the_capabilities_in_its_config(tmp_path):
    codex = agent(CodexAgent, tmp_path)
    argv = " ".join(codex.command("go", None, trial(tmp_path, Capabilities(True, 3))))
    assert "agents.max_concurrent_threads_per_session=3" in argv
    assert "features.multi_agent_v2.max_concurrent_threads_per_session=3" in argv
    off = " ".join(codex.command("go", None, trial(tmp_path, Capabilities(False))))
    assert "agents.enabled=false" in off and "features.multi_agent=false" in off
    plain = " ".join(codex.command("go", None, trial(tmp_path, Capabilities())))
    assert "agents." not in plain
