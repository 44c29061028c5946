"""Trajectories of the real codex, Claude Code and opencode, metered, against the scripted
model server: the tool calls in order are the ones the script asked for, each request's
tokens are what the server served, the wire alone and the CLI's events alone agree with the
joined trajectory, and every export validates against the ATIF-v1.4 schema."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import jsonschema
import pytest
from test_agents_real import EDIT, USAGE, api_key, cli, run_agent, task_dir

from pytest_agentbench.testing.clis import find_cli, missing_reason
from pytest_agentbench.trajectory import wire
from pytest_agentbench.trajectory.build import PARSERS, json_lines
from pytest_agentbench.trajectory.raw import ARCHIVE, read_archive

pytestmark = pytest.mark.real
pytest_plugins = ["pytest_agentbench.testing.pytest_plugin"]
__all__ = ["api_key", "cli", "task_dir"]  # fixtures, re-used

SCHEMA = json.loads((Path(__file__).parent / "fixtures" / "atif-v1.4.schema.json").read_text())
LOOK = {"calls": [{"shell": "cat notes.txt"}]}
DONE = {"message": "Changed hello to goodbye.\nCOMPLETION: done"}
SCRIPT = {"usage": USAGE, "turns": [LOOK, EDIT, DONE]}


def trial_dir(report: dict) -> Path:
    (directory,) = (Path(report["run"]["run_dir"]) / "trials").iterdir()
    return directory


@pytest.mark.parametrize(
    ("name", "sandbox"),
    [("codex", "bwrap"), ("claude", "bwrap"), ("opencode", "bwrap"), ("codex", "docker")],
)
def test_the_trajectory_is_the_scripts_conversation(
    pytester: pytest.Pytester,
    agentbench_model_server,
    name: str,
    task_dir: Path,
    api_key: str,
    sandbox: str,
) -> None:
    """Under docker, codex stands for the three (each runs under bwrap here)."""
    if find_cli(name) is None:
        pytest.skip(missing_reason(name))
    cli = name
    server = agentbench_model_server(SCRIPT)
    result, report = run_agent(
        pytester, cli, server, task_dir, "--agentbench-meter=on", sandbox=sandbox
    )
    result.assert_outcomes(passed=1)
    (observation,) = report["observations"]
    directory = trial_dir(report)
    document = json.loads((directory / "trajectory.json").read_text())
    jsonschema.validate(document, SCHEMA)
    assert document["extra"]["origin"] == "events+wire"
    agent_steps = [s for s in document["steps"] if s["source"] == "agent"]
    asked = [name for record in server.requests for name in record.tools]
    made = [c["function_name"] for s in agent_steps for c in s.get("tool_calls") or []]
    assert made == asked and asked
    served = [r.usage for r in server.requests if r.usage is not None]
    metered = [s["metrics"] for s in agent_steps]
    assert [m["prompt_tokens"] for m in metered] == [u["input"] for u in served]
    assert [m["completion_tokens"] for m in metered] == [u["output"] for u in served]
    assert [m["cached_tokens"] for m in metered] == [u["cached_input"] for u in served]
    figures = observation["trajectory"]
    assert figures["requests"] == len(server.requests)
    assert figures["tool_calls"]["total"] == len(asked)
    assert figures["files_written"] == 1 and figures["model_s"] is not None
    assert not figures["checks"]["claimed_done_without_change"]
    kept = gzip.decompress((directory / ARCHIVE).read_bytes()).decode()
    assert api_key not in kept
    # The CLI tells the model its working directory: kept, it is named, never a machine path.
    assert "<workspace>" in kept and str(pytester.path) not in kept

    # Each source alone tells the same story as the joined trajectory.
    evidence = read_archive((directory / ARCHIVE).read_bytes())
    streams = [kept.streams for kept in evidence.rounds]
    from_wire = [s for st in streams for s in wire.steps(json_lines(st["wire"]))]
    assert len([s for s in from_wire if s.source == "agent"]) == len(server.requests)
    assert [c.name for s in from_wire for c in s.tool_calls] == asked
    from_events = [s for st in streams for s in PARSERS[cli](json_lines(st["events"]))]
    assert [c.kind for s in from_events for c in s.tool_calls] == [
        c.kind for s in from_wire for c in s.tool_calls
    ]
    assert not [note for note in document.get("notes", "").splitlines() if "disagree" in note]


def test_a_cli_claiming_success_without_a_change_is_flagged(
    pytester: pytest.Pytester,
    agentbench_model_server,
    cli: str,
    task_dir: Path,
    api_key: str,
) -> None:
    server = agentbench_model_server({"usage": USAGE, "turns": [DONE]})
    result, report = run_agent(pytester, cli, server, task_dir, sandbox="bwrap")
    result.assert_outcomes(failed=1)
    (observation,) = report["observations"]
    assert observation["trajectory"]["checks"]["claimed_done_without_change"] is True
    assert observation["trajectory"]["tool_calls"]["total"] == 0
    result.stdout.fnmatch_lines(["transcript checks: claimed done without a change 1/1*"])
