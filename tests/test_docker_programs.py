"""Host-installed agent CLIs under --sandbox=docker: what gets mounted, and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentbench.sandbox.docker import PROGRAMS_DIR, DockerProvider
from pytest_agentbench.settings import SandboxLimits

from conftest import skip_unless_sandbox

pytestmark = pytest.mark.real


@pytest.fixture
def provider() -> DockerProvider:
    skip_unless_sandbox("docker")
    return DockerProvider(SandboxLimits(), None)


def test_a_native_binary_is_mounted_read_only_with_its_install_dir(
    provider: DockerProvider, tmp_path: Path
) -> None:
    package = tmp_path / "prefix" / "node_modules" / "cli" / "bin"
    package.mkdir(parents=True)
    for name in ("one", "two"):
        (package / name).write_bytes(b"\x7fELF rest of the binary")
    inner = provider.program_path(str(package / "one"))
    assert inner == f"{PROGRAMS_DIR}/0/node_modules/cli/bin/one"
    assert (
        provider.program_path(str(package / "two")) == f"{PROGRAMS_DIR}/0/node_modules/cli/bin/two"
    )
    assert provider.program_mounts == {str(tmp_path / "prefix"): f"{PROGRAMS_DIR}/0"}


def test_a_script_is_refused_and_a_bare_name_is_the_images(
    provider: DockerProvider, tmp_path: Path
) -> None:
    script = tmp_path / "cli.js"
    script.write_text("#!/usr/bin/env node\n")
    with pytest.raises(pytest.UsageError, match=r"cli\.js.*is a script.*bin=NAME"):
        provider.program_path(str(script))
    assert provider.program_path("codex") == "codex"
    assert provider.program_mounts == {}


def test_a_remote_engine_cannot_mount_host_programs(tmp_path: Path) -> None:
    skip_unless_sandbox("docker")
    remote = DockerProvider(SandboxLimits(), None, bind_mounts=False)
    binary = tmp_path / "cli"
    binary.write_bytes(b"\x7fELF")
    with pytest.raises(pytest.UsageError, match=r"remote Docker engine.*bin=NAME"):
        remote.program_path(str(binary))
