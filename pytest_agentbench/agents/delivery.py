"""Native delivery of an arm: guidance, skills and plugins written where the agent reads them.

Each agent names, relative to its trial's private home, its user-level instruction file
("guidance"), its user-level skills folder ("skills") and where a plugin directory is
installed ("plugins", a path with `{name}` for the plugin's name). Nothing goes into the
workspace (graded byte for byte) or the prompt; the prompt prefix is the run's, not the
agent's. What a CLI needs besides the files to load a plugin is agents/plugins.py's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.tasks.arms import Arm

COMPONENTS = ("guidance", "skills", "plugins")
WHERE = {
    "guidance": "has no user-level instruction file",
    "skills": "has no user-level skills folder",
    "plugins": "cannot install plugin directories",
}


@dataclass(frozen=True)
class Places:
    """Where an agent reads an arm's components, relative to its trial's private home: its
    user-level instruction file, skills folder and plugin install path (`{name}` the
    plugin's); None where it reads none, with why for plugins."""

    guidance: str | None = None
    skills: str | None = None
    plugins: str | None = None
    no_plugins: str = "it has no plugin mechanism the harness can install into"

    def report(self) -> dict[str, str]:
        return {c: f"~/{rel}" for c in COMPONENTS if (rel := getattr(self, c)) is not None}

    @property
    def plugins_folder(self) -> str | None:
        """The folder each installed plugin is a directory of (the path before `{name}`)."""
        return self.plugins.split("/{name}", 1)[0] if self.plugins is not None else None


def components(arm: Arm) -> list[str]:
    """The natively delivered components the arm carries."""
    present = {
        "guidance": arm.guidance is not None,
        "skills": bool(arm.skills),
        "plugins": bool(arm.plugins),
    }
    return [name for name in COMPONENTS if present[name]]


def refusals(name: str, places: Places | None, arms: Iterable[Arm]) -> list[str]:
    """One line per arm component the agent cannot receive natively (none for agents that run
    no model: places None, nothing reaches them)."""
    if places is None:
        return []
    return [
        f"[arm.{arm.name}] {component}: --agent={name} {WHERE[component]} to receive it"
        + (f" ({places.no_plugins})" if component == "plugins" else "")
        + f"; drop {component} from the arm or use an agent that reads it"
        for arm in arms
        for component in components(arm)
        if getattr(places, component) is None
    ]


def write_file(target: Path, data: bytes, mode: int) -> None:
    """A new file (never through a symlink, never over one), with its permission bits."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(target, mode)


def write_delivery(arm: Arm, home: Path, places: Places) -> None:
    """Write the arm's guidance, skills and plugins (every file, its mode kept) below home."""
    if arm.guidance is not None and places.guidance is not None:
        target = home / places.guidance
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(arm.guidance, encoding="utf-8")
    if places.skills is not None:
        for skill in arm.skills:
            for item in skill.files:
                write_file(home / places.skills / item.rel, item.data, item.mode)
    if places.plugins is not None:
        for plugin in arm.plugins:
            root = home / places.plugins.format(name=plugin.name)
            for entry in plugin.files:
                write_file(root / entry.rel, entry.data, entry.mode)


def skills_in(folder: Path) -> list[str]:
    """The skills a skills folder holds after a trial: each SKILL.md's directory, relative
    (the CLI's own too, such as codex's .system/...), sorted."""
    if not folder.is_dir():
        return []
    return sorted(str(p.parent.relative_to(folder)) for p in folder.rglob("SKILL.md"))


def plugins_in(folder: Path) -> list[str]:
    """The plugins installed in a plugin folder after a trial: its directories, sorted."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir())
