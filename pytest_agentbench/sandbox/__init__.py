"""Sandbox providers, chosen by --sandbox."""

from __future__ import annotations

from pytest_agentbench.sandbox.base import SandboxProvider
from pytest_agentbench.settings import Settings


def make_provider(settings: Settings) -> SandboxProvider:
    """The provider for settings.sandbox (validated by the options)."""
    from pytest_agentbench.sandbox.tmp import TmpProvider

    return TmpProvider()
