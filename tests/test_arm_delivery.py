"""Native delivery: each agent's arm lands in its private home where it reads it, nowhere else."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from pytest_agentbench.agents.base import Agent, AgentSession, TrialContext, check_delivery
from pytest_agentbench.agents.claude import ClaudeAgent
from pytest_agentbench.agents.codex import CodexAgent
from pytest_agentbench.agents.command import CommandAgent
from pytest_agentbench.agents.delivery import Places, skills_in, write_delivery
from pytest_agentbench.agents.mock import MockAgent
from pytest_agentbench.agents.offline import NopAgent, OracleAgent
from pytest_agentbench.agents.opencode import OpencodeAgent
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.arms import Arm, load_arms

from conftest import write_task

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
    assert isinstance(report, dict) and {"guidance", "skills"} <= set(report)
    assert ("plugins" in report) == (agent is not OpencodeAgent)  # opencode installs none


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


@pytest.mark.parametrize("workers", ["0", "2"])
def test_the_command_agent_finds_its_arm_in_its_home_and_vanilla_finds_nothing(
    pytester, monkeypatch, workers
):
    """Both arms solve the task by copying the answer: an extra file in the workspace would
    fail exact grading, so both passing shows the arm stayed out of it."""
    root = pytester.path / "tasks"
    write_task(root, "t", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    arms = write_arms(pytester.path)
    out = pytester.path / "out"
    out.mkdir()
    monkeypatch.setenv("OUT", str(out))
    script = (
        "import json, os, stat; e = os.environ; g = e.get('AGENTBENCH_GUIDANCE_FILE'); "
        "s = e.get('AGENTBENCH_SKILLS_DIR'); "
        "found = {'guidance': open(g).read() if g else None, 'home': e['HOME'], "
        "'in_home': all(p.startswith(e['HOME'] + '/') for p in (g, s) if p), "
        "'skills': sorted((os.path.relpath(os.path.join(d, f), s), "
        "stat.S_IMODE(os.stat(os.path.join(d, f)).st_mode)) "
        "for d, _, fs in os.walk(s) for f in fs) if s else None}; "
        "json.dump(found, open(os.path.join(e['OUT'], str(os.getpid())), 'w')); "
        "open('a.txt', 'w').write('2\\n')"
    )
    result = pytester.runpytest_subprocess(
        "--agent=command",
        "--sandbox=tmp",
        f'--agent-cmd={sys.executable} -c "{script}"',
        "--agent-opt=env=OUT",
        f"--tasks={root}",
        f"--arms={arms}",
        f"-n{workers}",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=2)
    seen = sorted(
        (json.loads(p.read_text()) for p in out.iterdir()),
        key=lambda found: found["guidance"] is not None,
    )
    vanilla, core = seen
    assert vanilla == {"guidance": None, "home": vanilla["home"], "in_home": True, "skills": None}
    assert core["guidance"] == GUIDANCE and core["in_home"]
    mode = stat.S_IMODE((pytester.path / "skills" / "careful" / "SKILL.md").stat().st_mode)
    assert core["skills"] == [["careful/SKILL.md", mode], ["careful/scripts/check.sh", 0o750]]


PLUGIN_AGENT = """
from pytest_agentbench.agents.base import Agent, AgentSession, RoundResult


class _Session(AgentSession):
    def run_round(self, prompt, round_index, timeout):
        open("ran", "w").close()
        return RoundResult(exit_code=0, timed_out=False, wall_s=0.0)


class Plain(Agent):
    name = "plain"

    def start(self, ctx):
        return _Session()


def pytest_agentbench_agent_names():
    return ["plain"]


def pytest_agentbench_make_agent(name, settings, config):
    return Plain(settings) if name == "plain" else None
"""


def test_a_plugin_agent_without_places_is_refused_before_any_trial(pytester):
    root = pytester.path / "tasks"
    write_task(root, "t", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    pytester.makeconftest(PLUGIN_AGENT)
    arms = write_arms(pytester.path)
    result = pytester.runpytest_subprocess(
        "--agent=plain", "--sandbox=tmp", f"--tasks={root}", f"--arms={arms}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--arms: [[]arm.core[]] guidance: --agent=plain has no user-level instruction file*",
            "*--arms: [[]arm.core[]] skills: --agent=plain has no user-level skills folder*",
        ]
    )
    assert not list(pytester.path.rglob("ran"))
