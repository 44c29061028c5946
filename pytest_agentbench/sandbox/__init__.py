"""Sandbox providers, chosen by --sandbox; one provider per process, made before any trial:
tmp, bubblewrap (bwrap, with cgroup limits), Docker (docker, and task_image for tasks that
bring their own image) and the ownership that lets a later run reap what a killed one left.
May import tasks/, fs/ and settings; never agents/, grading/ or anything above."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentbench.sandbox.base import SandboxProvider, memory_dir
from pytest_agentbench.settings import Settings

PROVIDER_KEY = pytest.StashKey[SandboxProvider]()
HOME_MEMORY_MIN_FREE = 2 << 30  # an agent's caches may grow; a container's 64 MB never qualifies


def home_parent(agent_home: str) -> str | None:
    """Where tmp and bwrap make agents' homes: memory for --agent-home=auto when there is room
    (three small files and directories per command trial, each a wait on many disks)."""
    return memory_dir(HOME_MEMORY_MIN_FREE) if agent_home == "auto" else None


def make_provider(settings: Settings) -> SandboxProvider:
    """The provider for settings.sandbox, showing agents what --agent-expose names; an unusable
    choice is a usage error naming the fix."""
    provider = _make_provider(settings)
    provider.mask(task_data(settings))
    provider.protect([Path(p) for p in settings.protected], task_sources(settings))
    provider.expose([Path(p) for p in settings.agent_expose], "--agent-expose")
    return provider


def _make_provider(settings: Settings) -> SandboxProvider:
    from pytest_agentbench.sandbox.bwrap import BwrapProvider, bwrap_works
    from pytest_agentbench.sandbox.tmp import TmpProvider

    kind = settings.sandbox
    limits = settings.sandbox_limits
    if kind == "docker":
        from pytest_agentbench.sandbox.task_image import TaskImageProvider

        return TaskImageProvider(limits, settings.docker_image, hosts=settings.docker_hosts)
    homes = home_parent(settings.agent_home)
    if kind == "tmp":
        return TmpProvider(homes)
    reason = bwrap_works()
    if reason is None:
        return BwrapProvider(limits, homes)
    if kind == "bwrap":
        raise pytest.UsageError(f"--sandbox=bwrap: {reason}; or choose --sandbox=docker/tmp")
    if limits.network == "none":
        raise pytest.UsageError(
            f"--agentbench-network=none: --sandbox=auto found no isolating sandbox ({reason})"
        )
    return TmpProvider(homes, fallback_reason=reason)


def task_sources(settings: Settings) -> list[Path]:
    """The run's task sources that are directories or files of this machine."""
    sources = [Path(s) for s in settings.tasks if not s.startswith("builtin:")]
    return [source.resolve() for source in sources if source.exists()]


def task_data(settings: Settings) -> list[Path]:
    """What agents must never see, even inside an exposed directory: the task sources, and
    this package (the bundled tasks and suites, with their expected trees)."""
    return [Path(__file__).resolve().parent.parent, *task_sources(settings)]


def provider_for(config: pytest.Config, settings: Settings) -> SandboxProvider:
    """This process's provider, made once (pytest_configure makes it, so errors come early)."""
    if PROVIDER_KEY not in config.stash:
        config.stash[PROVIDER_KEY] = make_provider(settings)
    return config.stash[PROVIDER_KEY]
