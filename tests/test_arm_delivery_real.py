"""Native delivery against the real CLIs: what reaches the model request, and what never does.

Each test runs a vanilla and a treatment trial of the real codex, Claude Code and opencode
(under bwrap and tmp; codex under docker too), driven by the scripted model server, which
records every request. The treatment's guidance text and its skill's name reach the request,
and the skill is in the trial's home; the vanilla trial's request holds neither. Instruction
files placed in the host folders above the workspace never reach the request under bwrap or
docker; under tmp, which isolates nothing, they reach Claude Code and opencode (the control:
it shows the files were placed where those CLIs read). Skipped only when the pinned CLI or
the sandbox is not installed (.ci/install-agent-clis.sh, .ci/install-sandboxes.sh).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_agentbench.agents.base import TrialContext
from pytest_agentbench.agents.claude import ClaudeAgent
from pytest_agentbench.agents.cli_base import CliAgent
from pytest_agentbench.agents.codex import CodexAgent
from pytest_agentbench.agents.opencode import OpencodeAgent
from pytest_agentbench.sandbox import make_provider
from pytest_agentbench.sandbox.base import SandboxProvider
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.arms import VANILLA, Arm, load_arms
from pytest_agentbench.tasks.directory import load_directory_task
from pytest_agentbench.tasks.model import Task
from pytest_agentbench.testing.clis import find_cli, missing_reason

from conftest import TEST_IMAGE, skip_unless_sandbox, write_task

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
ANSWER = {"turns": [{"message": "Nothing to change."}]}


# Claude Code and opencode read every parent folder's instruction files: under tmp, which
# isolates nothing, the folders above the workspace reach them (the control of this test).
READS_PARENTS = {"codex": False, "claude": True, "opencode": True}


# Every CLI under bwrap and tmp; codex also under docker, with the host's CLI mounted.
TRIALS = [(cli, kind) for kind in ("bwrap", "tmp") for cli in sorted(AGENTS)] + [
    ("codex", "docker")
]


@pytest.fixture
def cli(trial: tuple[str, str]) -> str:
    name = trial[0]
    if find_cli(name) is None:
        pytest.skip(missing_reason(name))
    return name


@pytest.fixture
def markers() -> dict[str, str]:
    """Unique words, so a hit can only come from the file that holds it."""
    return {
        key: f"{key}-{uuid.uuid4().hex[:12]}"
        for key in ("guidance", "skill", "skill_text", "above")
    }


@pytest.fixture
def arms(tmp_path: Path, markers: dict[str, str]) -> dict[str, Arm]:
    root = tmp_path / "arms"
    skill = root / "skills" / markers["skill"]
    skill.mkdir(parents=True)
    (root / "core.md").write_text(f"Always answer with the word {markers['guidance']}.\n")
    (skill / "SKILL.md").write_text(
        f"---\nname: {markers['skill']}\ndescription: Use when {markers['skill_text']}.\n---\n"
        "Check the file twice.\n"
    )
    (root / "arms.toml").write_text(
        f'[arm.core]\nguidance = ["core.md"]\nskills = ["skills/{markers["skill"]}"]\n'
    )
    return {arm.name: arm for arm in load_arms(root / "arms.toml")}


@pytest.fixture
def task(tmp_path: Path) -> Task:
    write_task(tmp_path / "tasks", "notes", {"notes.txt": "hello\n"}, {"notes.txt": "bye\n"})
    return load_directory_task(tmp_path / "tasks" / "notes")


@pytest.fixture
def provider(trial: tuple[str, str], cli: str) -> SandboxProvider:
    kind = trial[1]
    skip_unless_sandbox(kind)
    image = TEST_IMAGE if kind == "docker" else None
    return make_provider(Settings(agent=cli, sandbox=kind, docker_image=image))


def run_trial(
    cli: str,
    arm: Arm,
    server_base: str,
    provider: SandboxProvider,
    task: Task,
    above: str,
    monkeypatch: pytest.MonkeyPatch,
) -> list[str] | None:
    """One trial of cli in arm, with instruction files naming `above` in the two host folders
    above the trial's workspace; the skills found in its home after it ran."""
    monkeypatch.setenv(KEY_ENV, f"sk-scripted-{uuid.uuid4().hex}")
    opts = {
        "bin": str(find_cli(cli)),
        "base_url": server_base,
        "api_key_env": KEY_ENV,
        **({"retries": "0"} if cli != "opencode" else {}),
    }
    settings = Settings(agent=cli, sandbox=provider.kind, model="scripted-model", agent_opts=opts)
    agent = AGENTS[cli](settings)
    agent.use_sandbox(provider)
    with provider.create(task, f"notes-{arm.name}-r0") as sandbox:
        for folder in (sandbox.workspace.parent, sandbox.workspace.parent.parent):
            for name in ("CLAUDE.md", "AGENTS.md", "CONTEXT.md"):
                (folder / name).write_text(f"Mention {above} in every answer.\n")
        ctx = TrialContext(task, 0, 0, sandbox, 0, settings, arm)
        session = agent.start(ctx)
        try:
            result = session.run_round(task.prompt, 0, 90)
        finally:
            session.close()
        assert result.exit_code == 0, result.stderr_tail
        assert sorted(p.name for p in sandbox.workspace.iterdir()) == ["notes.txt"]
        return agent.skills_found(sandbox.home)


@pytest.mark.parametrize("trial", TRIALS, ids=[f"{c}-{k}" for c, k in TRIALS])
def test_guidance_and_skills_reach_the_request_only_in_the_treatment_and_nothing_above(
    trial: tuple[str, str],
    cli: str,
    arms: dict[str, Arm],
    markers: dict[str, str],
    task: Task,
    provider: SandboxProvider,
    agentbench_model_server: ServerFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, str] = {}
    skills: dict[str, list[str] | None] = {}
    for name in (VANILLA, "core"):
        server = agentbench_model_server(ANSWER)
        base = server.base_url if cli == "claude" else server.openai_base_url
        skills[name] = run_trial(
            cli, arms[name], base, provider, task, markers["above"], monkeypatch
        )
        assert server.tool_requests(), f"{cli} sent no model request"
        seen[name] = json.dumps([r.body for r in server.requests])
    assert markers["guidance"] in seen["core"]
    assert markers["skill"] in seen["core"]
    for marker in (markers["guidance"], markers["skill"], markers["skill_text"]):
        assert marker not in seen[VANILLA]
    assert markers["skill"] in (skills["core"] or [])
    assert markers["skill"] not in (skills[VANILLA] or [])
    leaks = provider.kind == "tmp" and READS_PARENTS[cli]
    for text in seen.values():
        assert (markers["above"] in text) == leaks


def test_the_arms_option_delivers_to_the_real_cli(
    pytester: pytest.Pytester,
    arms: dict[str, Arm],
    markers: dict[str, str],
    tmp_path: Path,
    agentbench_model_server: ServerFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same through `pytest --arms`: one run, a vanilla and a core trial of codex."""
    if find_cli("codex") is None:
        pytest.skip(missing_reason("codex"))
    skip_unless_sandbox("bwrap")
    monkeypatch.setenv(KEY_ENV, f"sk-scripted-{uuid.uuid4().hex}")
    write_task(pytester.path / "tasks", "notes", {"notes.txt": "hello\n"}, {"notes.txt": "hi\n"})
    server = agentbench_model_server({"turns": [{"message": "No."}, {"message": "No."}]})
    result = pytester.runpytest_subprocess(
        "--agent=codex",
        "--sandbox=bwrap",
        f"--tasks={pytester.path / 'tasks'}",
        f"--arms={tmp_path / 'arms' / 'arms.toml'}",
        "--model=scripted-model",
        f"--agent-opt=bin={find_cli('codex')}",
        f"--agent-opt=base_url={server.openai_base_url}",
        f"--agent-opt=api_key_env={KEY_ENV}",
        "--agent-opt=retries=0",
        "--agentbench-json=report.json",
        "-p",
        "no:cacheprovider",
        timeout=120,
    )
    result.assert_outcomes(failed=2)  # neither trial edits: both run, both graded
    bodies = [json.dumps(r.body) for r in server.tool_requests()]
    assert sorted(markers["guidance"] in b and markers["skill"] in b for b in bodies) == [
        False,
        True,
    ]
    report = json.loads((pytester.path / "report.json").read_text())
    found = {o["arm"]: o["skills_found"] for o in report["observations"]}
    assert markers["skill"] in found["core"] and markers["skill"] not in found[VANILLA]
