"""Where the agent CLIs live: pinned versions and one lookup shared by tests, CI and users.

The pins are the single source of truth: `.ci/install-agent-clis.sh` reads them by running
this file (`python clis.py pins`), so the install and the lookup can never disagree. This
module uses only the standard library for that reason.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CACHE = "/var/cache/agentbench/clis"
CACHE_ENV = "AGENTBENCH_CLI_CACHE"


@dataclass(frozen=True)
class CliPin:
    """One agent CLI as installed from npm."""

    name: str  # the agent name: codex, claude, opencode
    package: str  # npm package
    version: str  # exact pinned version
    binary: str  # executable name under node_modules/.bin

    @property
    def bin_env(self) -> str:
        """Environment variable that points at a specific build of this CLI."""
        return f"AGENTBENCH_{self.name.upper()}_BIN"

    def cache_dir(self, cache: Path | None = None) -> Path:
        return (cache or cache_root()) / f"{self.name}-{self.version}"


PINS: dict[str, CliPin] = {
    pin.name: pin
    for pin in (
        CliPin("codex", "@openai/codex", "0.171.0", "codex"),
        CliPin("claude", "@anthropic-ai/claude-code", "2.1.332", "claude"),
        CliPin("opencode", "opencode-ai", "1.18.33", "opencode"),
    )
}


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def find_cli(name: str) -> Path | None:
    """The binary to run for agent `name`: $AGENTBENCH_<NAME>_BIN, the pinned cache install,
    then PATH. None when none of them has it."""
    pin = PINS[name]
    explicit = os.environ.get(pin.bin_env)
    if explicit:
        return Path(explicit)
    cached = pin.cache_dir() / "node_modules" / ".bin" / pin.binary
    if cached.is_file() and os.access(cached, os.X_OK):
        return cached
    on_path = shutil.which(pin.binary)
    return Path(on_path) if on_path else None


# The npm package's bin/codex.js is a node launcher for a static binary in a platform package.
NATIVE_TARGETS = {
    "x86_64": ("x64", "x86_64-unknown-linux-musl"),
    "aarch64": ("arm64", "aarch64-unknown-linux-musl"),
}


def native_codex(launcher: Path) -> Path:
    """The static codex binary behind an npm install's node launcher, else launcher itself.

    Running it directly needs no node, so it also runs inside any Linux container image.
    """
    real = launcher.resolve()
    target = NATIVE_TARGETS.get(platform.machine())
    if real.suffix != ".js" or target is None or platform.system() != "Linux":
        return launcher
    arch, triple = target
    package = real.parent.parent  # node_modules/@openai/codex
    for vendor in (package.parent / f"codex-linux-{arch}" / "vendor", package / "vendor"):
        native = vendor / triple / "bin" / "codex"
        if native.is_file():
            return native
    return launcher


def native_binary(name: str, program: Path) -> Path:
    """The native executable that `program` (as find_cli gives it) finally runs."""
    return native_codex(program).resolve() if name == "codex" else program.resolve()


def missing_reason(name: str) -> str:
    """Why a test of agent `name` cannot run here, naming every place that was looked at."""
    pin = PINS[name]
    return (
        f"{pin.binary} CLI not found: set {pin.bin_env}, or install {pin.package}@{pin.version} "
        f"with .ci/install-agent-clis.sh (into {pin.cache_dir()}), or put {pin.binary} on PATH"
    )


def _main(argv: list[str]) -> int:
    if argv == ["pins"]:
        for pin in PINS.values():
            print(pin.name, pin.package, pin.version, pin.binary)
        return 0
    if argv == ["natives"]:  # "<name> <native binary>" per pinned CLI, for building images
        installed = {name: find_cli(name) for name in PINS}
        missing = [missing_reason(name) for name, path in installed.items() if path is None]
        if missing:
            print("; ".join(missing), file=sys.stderr)
            return 1
        for name, path in installed.items():
            assert path is not None
            print(name, native_binary(name, path))
        return 0
    if len(argv) == 2 and argv[0] == "find" and argv[1] in PINS:
        found = find_cli(argv[1])
        print(found if found else missing_reason(argv[1]))
        return 0 if found else 1
    usage = "usage: clis.py pins | clis.py natives | clis.py find {" + ",".join(PINS) + "}"
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
