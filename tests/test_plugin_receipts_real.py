"""A plugin's skills and hooks in the receipt, against the real Claude Code and codex under
bwrap (scripted model server): before the first model call each CLI lists exactly the
plugin's skill and hook (verified); a declared plugin skill taken out of the installed plugin,
or a skill planted in it that the plugin does not declare, stops the trial as a harness error
(treatment_mismatch) with no model request sent. Skipped only when the pinned CLI or bwrap is
not installed."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from test_arm_plugins_real import plugin_arms
from test_treatment_receipts_real import run

from pytest_agentbench.agents.plugins import CLAUDE_PLACE, CODEX_PLACE
from pytest_agentbench.sandbox.base import InfrastructureError

from conftest import cli_under_bwrap

if TYPE_CHECKING:
    from pytest_agentbench.testing.pytest_plugin import ServerFactory

pytestmark = pytest.mark.real
pytest_plugins = ["pytest_agentbench.testing.pytest_plugin"]

PLACE = {"claude": CLAUDE_PLACE, "codex": CODEX_PLACE}
ANSWER = {"turns": [{"message": "Nothing to change."}]}


@pytest.fixture(params=["claude", "codex"])
def cli(request: pytest.FixtureRequest) -> str:
    return cli_under_bwrap(str(request.param))


def test_the_receipt_lists_exactly_the_plugins_skill_and_hook(
    cli: str,
    tmp_path: Path,
    agentbench_model_server: ServerFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    skill = f"skill-{uuid.uuid4().hex[:8]}"
    flow = plugin_arms(tmp_path / "arms", skill)["flow"]
    server = agentbench_model_server(ANSWER)
    base = server.base_url if cli == "claude" else server.openai_base_url
    receipt = run(cli, flow, tmp_path, base, monkeypatch)
    assert receipt is not None and receipt["problems"] == []
    parts = receipt["components"]
    named = "flow:tidy" if cli == "claude" else f"flow:{skill}"  # by directory, by name
    assert parts["plugin_skills"] == {"expected": [named], "seen": [named], "status": "verified"}
    assert parts["plugin_hooks"]["status"] == "verified"
    assert parts["plugin_hooks"]["seen"] == [
        'flow:SessionStart[]: echo "${CLAUDE_PLUGIN_ROOT}" > "$HOME/hook-ran"'
    ]
    assert parts["skills"]["seen"] == []  # the plugin's skill is not counted as the arm's own
    assert server.tool_requests()  # and the trial went on to code
    # After coding: the installed plugin's files unchanged, and what the CLI said it loaded.
    plugin_files = [path for path in receipt["delivered"] if "/flow/" in path]
    assert any(path.endswith("/skills/tidy/SKILL.md") for path in plugin_files), plugin_files
    assert receipt["after"]["delivered_unchanged"] is True
    if cli == "claude":  # its init event lists the plugin's skill beside the arm's own
        assert receipt["after"]["skills_match"] is True


def in_plugin(cli: str, tamper: Callable[[Path], None]) -> Callable[[Path], None]:
    """tamper, given the installed plugin's directory in the trial's home."""
    return lambda home: tamper(home / PLACE[cli].format(name="flow"))


def hide_the_skill(plugin: Path) -> None:
    shutil.rmtree(plugin / "skills" / "tidy")


def plant_a_skill(plugin: Path) -> None:
    folder = plugin / "skills" / "stowaway"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: stowaway\ndescription: Use when planted.\n---\n")


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [(hide_the_skill, "declared but not seen"), (plant_a_skill, "seen but not declared")],
)
def test_a_hidden_or_planted_plugin_skill_stops_the_trial_before_any_request(
    cli: str,
    tamper: Callable[[Path], None],
    problem: str,
    tmp_path: Path,
    agentbench_model_server: ServerFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    flow = plugin_arms(tmp_path / "arms", f"skill-{uuid.uuid4().hex[:8]}")["flow"]
    server = agentbench_model_server(ANSWER)
    base = server.base_url if cli == "claude" else server.openai_base_url
    with pytest.raises(InfrastructureError) as caught:
        run(cli, flow, tmp_path, base, monkeypatch, tamper=in_plugin(cli, tamper))
    assert caught.value.cause == "treatment_mismatch"
    assert f"plugin_skills: {problem}" in str(caught.value)
    assert server.requests == []
