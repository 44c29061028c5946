"""The resource and network limits every isolating sandbox applies, parsed once from the options."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from pytest_agentbench.sizes import format_size, parse_size

NETWORK_CHOICES = ("host", "none")
# Defaults sized for a small CI machine running `-n 2`: two trials never take more than it has.
DEFAULT_CPUS = 1.0
DEFAULT_MEMORY = "2g"
DEFAULT_PIDS = 512
DEFAULT_DISK = 1 << 30  # bytes a trial's workspace and private home may take together
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_memory(flag: str, raw: str) -> int:
    """Bytes from a Docker-style size (512m, 2g, 1048576); anything else is a usage error."""
    match = re.fullmatch(r"\s*(\d+)\s*([bkmg]?)b?\s*", raw.lower())
    if match is None or int(match.group(1)) == 0:
        raise pytest.UsageError(f"{flag} {raw!r}: expected a size such as 512m or 2g")
    return int(match.group(1)) * _UNITS[match.group(2)]


def parse_disk(flag: str, raw: str) -> int:
    """Bytes from a size such as 512M, 1G or 2GiB (powers of 1024); else a usage error."""
    size = parse_size(raw)
    if size is None:
        raise pytest.UsageError(
            f"{flag} {raw!r}: expected a size > 0 such as 512M, 1G or 2GiB (K, M, G, T or "
            "KiB, MiB, GiB, TiB: powers of 1024)"
        )
    return size


def parse_cpus(flag: str, raw: object) -> float:
    try:
        value = float(str(raw))
    except ValueError:
        value = 0.0
    if value <= 0:
        raise pytest.UsageError(f"{flag} {raw!r}: expected a number of CPUs > 0, such as 1 or 0.5")
    return value


@dataclass(frozen=True)
class SandboxLimits:
    """network: 'host' keeps the network (agents need it for inference), 'none' cuts it."""

    network: str = "host"
    cpus: float = DEFAULT_CPUS
    memory: str = DEFAULT_MEMORY
    pids: int = DEFAULT_PIDS
    disk: int = DEFAULT_DISK

    @property
    def disk_text(self) -> str:
        return format_size(self.disk)

    @property
    def memory_bytes(self) -> int:
        return parse_memory("--docker-memory", self.memory)
