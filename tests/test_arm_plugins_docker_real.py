"""Arm plugins under --sandbox=docker, through a whole `pytest --arms` run of the real Claude
Code and codex (the host's CLI mounted into the container), driven by the scripted model
server: the plugin's skill reaches the treatment's request and never the vanilla one, its
SessionStart hook ran inside the container, the discovery receipt lists exactly the declared
components, and both trials are scored (no harness error). The plugin's paths are written as
the CLI sees them inside the container, which bwrap, sharing the host's paths, never checks.
Skipped only when the pinned CLI or Docker is not installed."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING

import pytest
from test_arm_plugins_real import plugin_arms

from pytest_agentbench.testing.clis import find_cli, missing_reason

from conftest import TEST_IMAGE, our_containers, skip_unless_sandbox, write_task

if TYPE_CHECKING:
    from pytest_agentbench.testing.pytest_plugin import ServerFactory

pytestmark = pytest.mark.real
pytest_plugins = ["pytest_agentbench.testing.pytest_plugin"]

KEY_ENV = "AGENTBENCH_TEST_KEY"
# The hook's mark is read back by the agent's one shell call, so it shows in the next request.
SHOW_MARK = 'cat "$HOME/hook-ran" 2>/dev/null || echo no-hook-mark'


# One conversation per trial, played in turn: the vanilla trial's and the treatment's.
ANSWER = {"turns": [{"calls": [{"shell": SHOW_MARK}]}, {"message": "Nothing to change."}] * 2}


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_a_plugin_arm_runs_whole_under_docker(
    cli: str,
    pytester: pytest.Pytester,
    agentbench_model_server: ServerFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if find_cli(cli) is None:
        pytest.skip(missing_reason(cli))
    skip_unless_sandbox("docker")
    skill = f"skill-{uuid.uuid4().hex[:10]}"
    plugin_arms(pytester.path, skill)
    task_id = f"notes-{uuid.uuid4().hex[:8]}"  # names this test's containers
    write_task(pytester.path / "tasks", task_id, {"notes.txt": "hi\n"}, {"notes.txt": "hi\n"})
    monkeypatch.setenv(KEY_ENV, f"sk-scripted-{uuid.uuid4().hex}")
    server = agentbench_model_server(ANSWER)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        f"--agent={cli}",
        "--sandbox=docker",
        f"--docker-image={TEST_IMAGE}",
        "--tasks=tasks",
        "--arms=arms.toml",
        "--model=scripted-model",
        f"--agent-opt=bin={find_cli(cli)}",
        f"--agent-opt=base_url={server.base_url if cli == 'claude' else server.openai_base_url}",
        f"--agent-opt=api_key_env={KEY_ENV}",
        "--agent-opt=retries=0",
        "--agentbench-json=report.json",
        "--durations=5",
        timeout=180,
    )
    print(result.stdout.str())
    assert our_containers(task_id) == set()
    report = json.loads((pytester.path / "report.json").read_text())
    by_arm = {o["arm"]: o for o in report["observations"]}
    assert {arm: o["cause"] for arm, o in by_arm.items()} == {"vanilla": None, "flow": None}, (
        result.stdout.str()[-3000:]
    )
    assert all(o["final_exact"] for o in by_arm.values())
    bodies = [json.dumps(r.body) for r in server.tool_requests()]
    treated = [b for b in bodies if f"flow:{skill}" in b]
    assert treated, f"{cli}: the plugin's skill reached no request"
    assert len(treated) < len(bodies), "the vanilla trial's requests must not hold the skill"
    # The hook wrote its mark in the container, naming the plugin root as the CLI saw it.
    assert any("/plugins/flow" in b or "/flow/local" in b for b in treated)
    assert not any("/plugins/flow" in b or "/flow/local" in b for b in bodies if b not in treated)
    receipts = {
        path.parent.name.split("__")[0]: json.loads(path.read_text())
        for path in pytester.path.glob(".agentbench/runs/*/trials/*/treatment.json")
    }
    assert receipts["flow"]["status"] != "mismatch", receipts["flow"]
    assert receipts["vanilla"]["status"] != "mismatch", receipts["vanilla"]
    if cli == "claude":  # it lists a plugin's hooks before coding; codex does not
        hooks = receipts["flow"]["components"]["plugin_hooks"]
        assert hooks["status"] == "verified" and len(hooks["seen"]) == 1, hooks
