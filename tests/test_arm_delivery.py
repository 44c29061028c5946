"""Native delivery: each agent's arm lands in its private home where it reads it, nowhere else."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_agentbench.agents.base import Agent, AgentSession, TrialContext
from pytest_agentbench.agents.claude import ClaudeAgent
from pytest_agentbench.agents.codex import CodexAgent
from pytest_agentbench.agents.command import CommandAgent
from pytest_agentbench.agents.delivery import Places, check_delivery, skills_in, write_delivery
from pytest_agentbench.agents.mock import MockAgent
from pytest_agentbench.agents.offline import NopAgent, OracleAgent
from pytest_agentbench.agents.opencode import OpencodeAgent
from pytest_agentbench.arms import Arm, load_arms
from pytest_agentbench.settings import Settings

GUIDANCE = "Read the whole file before you edit it.\n"
SKILL_MD = "---\nname: careful-edit\ndescription: Edit one line at a time.\n---\nSteps.\n"


def write_arms(root: Path) -> Path:
    """An arms file with a treatment carrying guidance and a skill with an executable script."""
    (root / "core.md").write_text(GUIDANCE)
    skill = root / "skills" / "careful"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD)
    (skill / "scripts" / "check.sh").write_text("#!/bin/sh\nexit 0\n")
    (skill / "scripts" / "check.sh").chmod(0o750)
    path = root / "arms.toml"
    path.write_text('[arm.core]\nguidance = ["core.md"]\nskills = ["skills/careful"]\n')
    return path


def files_below(root: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(root)): (stat.S_IMODE(p.stat().st_mode), p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    ("agent", "guidance", "skills"),
    [
        (CodexAgent, ".codex/AGENTS.md", ".codex/skills"),
        (ClaudeAgent, ".claude/CLAUDE.md", ".claude/skills"),
        (OpencodeAgent, ".config/opencode/AGENTS.md", ".config/opencode/skills"),
        (CommandAgent, "guidance.md", "skills"),
    ],
)
def test_a_treatment_lands_whole_in_the_agents_user_level_places(tmp_path, agent, guidance, skills):
    vanilla, core = load_arms(write_arms(tmp_path))
    home = tmp_path / "home"
    home.mkdir()
    bare(agent).deliver(vanilla, home)
    assert files_below(home) == {}
    bare(agent).deliver(core, home)
    skill_md = tmp_path / "skills" / "careful" / "SKILL.md"
    assert files_below(home) == {
        guidance: (0o644 & ~_umask(), GUIDANCE.encode()),
        f"{skills}/careful/SKILL.md": (stat.S_IMODE(skill_md.stat().st_mode), SKILL_MD.encode()),
        f"{skills}/careful/scripts/check.sh": (0o750, b"#!/bin/sh\nexit 0\n"),
    }


def bare(agent: type[Agent]) -> Agent:
    """The agent without its __init__ (no binary, no options): delivery reads class facts."""
    return agent.__new__(agent)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class _Guided(Agent):
    """A plugin agent that reads only an instruction file."""

    name = "guided"
    delivery = Places(guidance="GUIDE.md")

    def start(self, ctx: TrialContext) -> AgentSession:
        raise NotImplementedError


class _Plain(Agent):
    """A plugin agent that says nothing about delivery: it receives no arm component."""

    name = "plain"

    def start(self, ctx: TrialContext) -> AgentSession:
        raise NotImplementedError


def test_a_component_the_agent_cannot_receive_is_refused_naming_arm_component_and_agent(
    tmp_path,
):
    arms = (*load_arms(write_arms(tmp_path)), Arm("hint", prompt_prefix="Hint: "))
    with pytest.raises(pytest.UsageError) as excinfo:
        check_delivery(_Plain(Settings(agent="plain")), arms)
    assert str(excinfo.value).splitlines() == [
        "--arms: [arm.core] guidance: --agent=plain has no user-level instruction file to "
        "receive it; drop guidance from the arm or use an agent that reads it",
        "--arms: [arm.core] skills: --agent=plain has no user-level skills folder to receive "
        "it; drop skills from the arm or use an agent that reads it",
    ]
    with pytest.raises(pytest.UsageError, match=r"^--arms: \[arm.core\] skills: --agent=guided"):
        check_delivery(_Guided(Settings(agent="guided")), arms)
    check_delivery(
        _Plain(Settings(agent="plain")), (arms[0], arms[2])
    )  # vanilla and a prefix: no component


@pytest.mark.parametrize("agent", [CodexAgent, ClaudeAgent, OpencodeAgent, CommandAgent])
def test_every_builtin_process_agent_receives_both_components(tmp_path, agent):
    check_delivery(bare(agent), load_arms(write_arms(tmp_path)))
    report = bare(agent).delivery_report()
    assert isinstance(report, dict) and sorted(report) == ["guidance", "skills"]


@pytest.mark.parametrize("agent", [MockAgent, OracleAgent, NopAgent])
def test_agents_that_run_no_model_receive_nothing_and_say_so(tmp_path, agent):
    arms = load_arms(write_arms(tmp_path))
    instance = bare(agent)
    check_delivery(instance, arms)
    instance.deliver(arms[1], tmp_path / "home")
    assert not (tmp_path / "home").exists()
    assert instance.delivery_report() == "none"
    assert instance.skills_found(tmp_path) is None


def test_delivery_never_overwrites_a_file_already_in_the_home(tmp_path):
    _, core = load_arms(write_arms(tmp_path))
    home = tmp_path / "home"
    (home / "skills" / "careful").mkdir(parents=True)
    (home / "skills" / "careful" / "SKILL.md").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileExistsError):
        write_delivery(core, home, Places(skills="skills"))
    assert not (tmp_path / "elsewhere").exists()


def test_skills_found_lists_every_skill_folder_the_cli_keeps_too(tmp_path):
    for rel in ("careful", ".system/imagegen", "notes/deep"):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "SKILL.md").write_text(SKILL_MD)
    (tmp_path / "careful" / "scripts").mkdir()
    assert skills_in(tmp_path) == [".system/imagegen", "careful", "notes/deep"]
    assert skills_in(tmp_path / "missing") == []
