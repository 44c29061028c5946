"""Native delivery of an arm: guidance and skills written where the agent itself reads them.

Each agent names, relative to its trial's private home, its user-level instruction file
("guidance") and its user-level skills folder ("skills"). Nothing goes into the workspace
(graded byte for byte) or the prompt; the prompt prefix is the run's, not the agent's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.tasks.arms import Arm

COMPONENTS = ("guidance", "skills")


@dataclass(frozen=True)
class Places:
    """Where an agent reads an arm's components, relative to its trial's private home: its
    user-level instruction file and skills folder; None where it reads none."""

    guidance: str | None = None
    skills: str | None = None

    def report(self) -> dict[str, str]:
        return {c: f"~/{rel}" for c in COMPONENTS if (rel := getattr(self, c)) is not None}


def components(arm: Arm) -> list[str]:
    """The natively delivered components the arm carries."""
    present = {"guidance": arm.guidance is not None, "skills": bool(arm.skills)}
    return [name for name in COMPONENTS if present[name]]


def refusals(name: str, places: Places | None, arms: Iterable[Arm]) -> list[str]:
    """One line per arm component the agent cannot receive natively (none for agents that run
    no model: places None, nothing reaches them)."""
    if places is None:
        return []
    return [
        f"[arm.{arm.name}] {component}: --agent={name} has no user-level "
        f"{'instruction file' if component == 'guidance' else 'skills folder'} to receive it; "
        f"drop {component} from the arm or use an agent that reads it"
        for arm in arms
        for component in components(arm)
        if getattr(places, component) is None
    ]


def write_delivery(arm: Arm, home: Path, places: Places) -> None:
    """Write the arm's guidance and skills (every file, its mode kept) below home."""
    if arm.guidance is not None and places.guidance is not None:
        target = home / places.guidance
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(arm.guidance, encoding="utf-8")
    if places.skills is None:
        return
    for skill in arm.skills:
        for item in skill.files:
            target = home / places.skills / item.rel
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(item.data)
            os.chmod(target, item.mode)


def skills_in(folder: Path) -> list[str]:
    """The skills a skills folder holds after a trial: each SKILL.md's directory, relative
    (the CLI's own too, such as codex's .system/...), sorted."""
    if not folder.is_dir():
        return []
    return sorted(str(p.parent.relative_to(folder)) for p in folder.rglob("SKILL.md"))
