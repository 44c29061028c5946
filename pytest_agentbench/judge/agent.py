"""Judges asked through an agent CLI (`--judge-agent claude|codex`)."""

from __future__ import annotations

from pytest_agentbench.judge.asking import Asker, JudgeError


def agent_asker(kind: str, model: str | None, base_url: str | None) -> Asker:
    """The agent CLI `kind` as a judge of MODEL, at base_url when given."""
    raise JudgeError("--judge-agent is not available yet")
