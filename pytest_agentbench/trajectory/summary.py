"""A trial's trajectory and its Observation block, from its evidence: the one path the run
and `agentbench retrace` share, so both give the same figures from the same raw streams."""

from __future__ import annotations

import json
from typing import Any, cast

from pytest_agentbench.tasks.observation import TrajectoryFigures
from pytest_agentbench.trajectory.atif import to_atif
from pytest_agentbench.trajectory.build import build
from pytest_agentbench.trajectory.checks import transcript_checks
from pytest_agentbench.trajectory.figures import trajectory_figures
from pytest_agentbench.trajectory.model import Trajectory
from pytest_agentbench.trajectory.raw import Evidence

TRAJECTORY_FILE = "trajectory.json"  # in the trial directory: the ATIF export
WORKSPACE = "<workspace>"  # the workspace as every kept path names it (trajectory.paths)


def summarise(agent: str, evidence: Evidence) -> tuple[Trajectory, TrajectoryFigures]:
    """The trajectory, and the Observation's `trajectory` block: its figures and checks.

    evidence.trial holds what the trial knew besides the streams (raw.RawArchive.close):
    agent_s, harness_s, test_command, protected, prompt, diff_empty, verdict, final_message.
    """
    facts = evidence.trial
    trajectory = build(agent, evidence)
    figures = trajectory_figures(
        trajectory,
        test_command=facts.get("test_command"),
        agent_s=float(facts.get("agent_s") or 0.0),
        harness_s=float(facts.get("harness_s") or 0.0),
    )
    checks = transcript_checks(
        trajectory,
        diff_empty=bool(facts.get("diff_empty")),
        verdict=facts.get("verdict"),
        final_message=facts.get("final_message"),
        protected=list(facts.get("protected") or ()),
        workspace=[WORKSPACE],
        prompt=str(facts.get("prompt") or ""),
    )
    block = cast(TrajectoryFigures, {**figures, "checks": checks, "cut": evidence.cut is not None})
    return trajectory, block


def atif_text(trajectory: Trajectory, trial: dict[str, Any]) -> str:
    """trajectory.json's text: the ATIF export with the trial it belongs to, compact (json's
    indented form is several times slower to write, on every trial)."""
    document = to_atif(trajectory, trial=trial)
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"
