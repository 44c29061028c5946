"""A trial's trajectory from its raw evidence: one parser per agent CLI, the wire, both joined.

The run and `agentbench retrace` both build through here from the same evidence, so a parser
fixed later gives a finished run's trajectories without paying for the trials again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_agentbench.trajectory import atif, claude, codex, opencode, wire
from pytest_agentbench.trajectory.join import join
from pytest_agentbench.trajectory.model import MESSAGE_LIMIT, Origin, Step, Trajectory, bounded_text
from pytest_agentbench.trajectory.raw import Evidence, RoundEvidence

EventParser = Callable[[Sequence[Mapping[str, Any]]], list[Step]]
PARSERS: dict[str, EventParser] = {
    "codex": codex.steps,
    "claude": claude.steps,
    "opencode": opencode.steps,
}
# The more a trajectory's source knows, the earlier it stands: a trial's origin is its best
# round's.
RANK: tuple[Origin, ...] = ("events+wire", "wire", "events", "file", "simulated", "stdout", "none")


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a text, one a line; other lines (banners, junk) are skipped."""
    found = []
    for line in text.split("\n"):  # not splitlines: JSON may hold U+2028 and kin
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def file_steps(text: str) -> list[Step]:
    """Steps an agent wrote itself (AGENTBENCH_TRAJECTORY_FILE): one ATIF document, or ATIF
    steps one a line (a single line of one step included)."""
    try:
        document = json.loads(text)
    except ValueError:
        document = None
    if not (isinstance(document, dict) and "steps" in document):
        document = {"steps": json_lines(text)}
    return atif.from_atif({"session_id": "", "agent": {}, **document}).steps


def stdout_steps(text: str) -> list[Step]:
    """A command's round as one agent step: its stdout lines, as kept (the tail)."""
    lines = "\n".join(line for line in text.splitlines() if line.strip())
    return [Step("agent", bounded_text(lines, MESSAGE_LIMIT) or "")] if lines else []


def round_steps(agent: str, evidence: RoundEvidence) -> tuple[list[Step], Origin, list[str]]:
    """The agent's steps of one round, where they came from, and what did not reconcile."""
    streams, notes = evidence.streams, list[str]()
    if "simulated" in streams:
        return [Step.from_json(r) for r in json_lines(streams["simulated"])], "simulated", notes
    if "file" in streams:
        return file_steps(streams["file"]), "file", notes
    parser = PARSERS.get(agent)
    events = parser(json_lines(streams["events"])) if parser and "events" in streams else []
    seen = wire.steps(json_lines(streams["wire"])) if "wire" in streams else []
    if events and seen:
        steps, disagreements = join(events, seen)
        return steps, "events+wire", [*notes, *disagreements]
    if seen:
        if parser and "events" in streams:
            notes.append(f"{agent}'s events gave no steps: the wire's alone are shown")
        return seen, "wire", notes
    if events:
        return events, "events", notes
    if "stdout" in streams:
        return stdout_steps(streams["stdout"]), "stdout", notes
    return [], "none", notes


def build(agent: str, evidence: Evidence) -> Trajectory:
    """The trial's trajectory: each round's prompt as a user step, then the agent's steps."""
    facts = evidence.trial
    trajectory = Trajectory(
        agent=agent,
        origin="none",
        agent_version=facts.get("agent_version"),
        model=facts.get("model"),
        session_id=facts.get("session_id"),
    )
    origins = []
    for kept in evidence.rounds:
        steps, origin, notes = round_steps(agent, kept)
        origins.append(origin)
        where = f"attempt {kept.attempt} round {kept.round}: "
        trajectory.notes.extend(where + note for note in notes)
        user = Step("user", kept.prompt)
        for step in (user, *steps):
            step.attempt, step.round = kept.attempt, kept.round
            trajectory.steps.append(step)
    trajectory.origin = min(origins, key=RANK.index, default="none")
    if evidence.cut:
        trajectory.notes.append(evidence.cut)
    return trajectory
