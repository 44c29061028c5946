"""Sandbox providers, chosen by --sandbox; one provider per process, made before any trial."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_agentbench.sandbox.base import SandboxProvider

if TYPE_CHECKING:  # settings imports sandbox.limits, which would import this package first
    from pytest_agentbench.settings import Settings

PROVIDER_KEY = pytest.StashKey[SandboxProvider]()


def make_provider(settings: Settings) -> SandboxProvider:
    """The provider for settings.sandbox; an unusable choice is a usage error naming the fix."""
    from pytest_agentbench.sandbox.bwrap import BwrapProvider, bwrap_works
    from pytest_agentbench.sandbox.tmp import TmpProvider

    kind = settings.sandbox
    limits = settings.sandbox_limits
    if kind == "docker":
        from pytest_agentbench.sandbox.docker import DockerProvider

        return DockerProvider(limits, settings.docker_image)
    if kind == "tmp":
        return TmpProvider()
    reason = bwrap_works()
    if reason is None:
        return BwrapProvider(limits)
    if kind == "bwrap":
        raise pytest.UsageError(f"--sandbox=bwrap: {reason}; or choose --sandbox=docker/tmp")
    if limits.network == "none":
        raise pytest.UsageError(
            f"--agentbench-network=none: --sandbox=auto found no isolating sandbox ({reason})"
        )
    return TmpProvider(fallback_reason=reason)


def provider_for(config: pytest.Config, settings: Settings) -> SandboxProvider:
    """This process's provider, made once (pytest_configure makes it, so errors come early)."""
    if PROVIDER_KEY not in config.stash:
        config.stash[PROVIDER_KEY] = make_provider(settings)
    return config.stash[PROVIDER_KEY]
