"""Settings: the validated options of one run, shared by the plugin, agents and sandboxes,
with the resource and network limits every isolating sandbox applies (parsed once from the
options)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench import __version__
from pytest_agentbench.fs.sizes import format_size, parse_size

NETWORK_CHOICES = ("host", "none")
# Defaults sized for a small CI machine running `-n 2`: two trials never take more than it has.
DEFAULT_CPUS = 1.0
DEFAULT_MEMORY = "2g"
DEFAULT_PIDS = 512
DEFAULT_DISK = 1 << 30  # bytes a trial's workspace and private home may take together
MEASURE_TOOLS = {
    "lines": None,
    "complexity": "lizard",
    "dead_code": "vulture",
    "coverage": "coverage",
}
"""Each code measure (docs/measures.md) and the module it needs from the `measure` extra."""

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


@dataclass(frozen=True)
class Settings:
    """Everything that decides how trials run. Frozen: it is read by every worker."""

    agent: str
    repeats: int = 1
    tasks: tuple[str, ...] = ()
    model: str | None = None
    reasoning: str | None = None
    agent_cmd: str | None = None
    agent_opts: dict[str, str] = field(default_factory=dict)
    agent_timeout: float | None = None
    oracle_recoveries: int = 0
    retry_failures: int = 0
    # Legs of one session per trial (tasks/segments.py) and the steers some legs get instead
    # of the continuation: (leg, text), legs 2..segments.
    segments: int = 1
    steers: tuple[tuple[int, str], ...] = ()
    json_path: Path | None = None
    seed: int = 0
    sandbox: str = "auto"
    docker_image: str | None = None
    docker_hosts: tuple[str, ...] = ()  # --docker-host: a pool of engines (sandbox/engines.py)
    # SWE-bench images by instance: {id} and {hub_id} filled in (tasks/swebench.py); the image
    # name is part of each instance's fixture hash, so runs on other images never pool.
    swebench_images: str = "sweb.eval.x86_64.{hub_id}:latest"
    sandbox_limits: SandboxLimits = field(default_factory=SandboxLimits)
    agent_home: str = "auto"  # where agents' homes live; measures nothing, so no identity
    agent_expose: tuple[str, ...] = ()  # absolute host paths agents see read-only
    protected: tuple[str, ...] = ()  # what no path shown to agents is or holds: the project, runs
    # Run control: what is kept and when to stop starting trials; they measure nothing either.
    keep: str = "none"  # none | failed | all: trial workspaces kept in the run directory
    budget_usd: float | None = None
    budget_tokens: int | None = None
    retry_infra: int = 2  # fresh attempts after an infrastructure failure
    max_consecutive_failures: int = 3  # the circuit breaker (breaker.py), PluginBench's K
    concurrency: int = 1  # trials in flight at once per pytest process (run/ahead.py)
    # The metering proxy (docs/metering.md): auto | on | off; faults change what is measured.
    meter: str = "auto"
    faults: str = ""
    meter_log: Path | None = None
    # --agentbench-meter-listen: the address each process's meter takes trials' routes on
    # (None: loopback only), with --agentbench-meter-tls's "CERT,KEY" (None: plain HTTP).
    meter_listen: str | None = None
    meter_tls: str | None = None
    label: str | None = None  # the run's name in reports; runs of one label pool
    raw_limit: int = 16 << 20  # compressed bytes of raw evidence kept per trial (raw.jsonl.gz)
    trajectories: bool = True  # off: no trajectory, figures, checks or raw evidence at all
    measure: tuple[str, ...] = ("lines",)  # code measures of each trial's change (MEASURE_TOOLS)
    change_limit: int = 1 << 20  # bytes of each trial's whole change kept (change.patch)

    def run_label(self) -> str:
        """The run's name: --agentbench-label, else agent, model, reasoning and the adapter
        options."""
        if self.label:
            return self.label
        named = (("model", self.model), ("reasoning", self.reasoning))
        parts = [self.agent, *(f"{key}={value}" for key, value in named if value)]
        parts += [f"{k}={v}" for k, v in sorted(self.agent_opts.items())]
        return " ".join(parts)

    def timeout_for(self, task_timeout: float) -> float:
        return self.agent_timeout if self.agent_timeout is not None else task_timeout

    def identity(self) -> dict[str, Any]:
        """The fields that decide whether two runs measure the same thing."""
        return {
            "agent": self.agent,
            "model": self.model,
            "reasoning": self.reasoning,
            "agent_cmd": self.agent_cmd,
            "agent_opts": dict(sorted(self.agent_opts.items())),
            "agent_timeout": self.agent_timeout,
            "oracle_recoveries": self.oracle_recoveries,
            "retry_failures": self.retry_failures,
            # Only a segmented run says so: an unsegmented one pools with runs made before.
            **({"segments": self.segments} if self.segments != 1 else {}),
            **({"steers": [list(steer) for steer in self.steers]} if self.steers else {}),
            "sandbox": self.sandbox,
            "harness_version": __version__,
            **({"faults": self.faults} if self.faults else {}),
            **({"label": self.label} if self.label else {}),  # a named run pools by its name
        }

    def config_hash(self) -> str:
        payload = json.dumps(self.identity(), sort_keys=True).encode()
        return hashlib.sha256(payload).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("protected")  # this machine's places, the run's own directory among them
        data["json_path"] = str(self.json_path) if self.json_path else None
        data["tasks"] = list(self.tasks)
        data["measure"] = list(self.measure)
        if not self.faults:  # runs without faults or a request log record no such keys
            data.pop("faults")
        for key in ("docker_hosts", "meter_listen", "meter_tls"):  # recorded when given
            if not data[key]:
                data.pop(key)
        if self.meter_log is None:
            data.pop("meter_log")
        else:
            data["meter_log"] = str(self.meter_log)
        return data


def parse_agent_opts(values: list[str]) -> dict[str, str]:
    """KEY=VALUE pairs from --agent-opt; a bad pair is a usage error that shows the form."""
    opts: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(
                f"--agent-opt {item!r}: expected KEY=VALUE (for example --agent-opt seed=7)"
            )
        opts[key.strip()] = value
    return opts


def parse_int(name: str, raw: object, minimum: int) -> int:
    try:
        value = int(str(raw))
    except ValueError:
        raise pytest.UsageError(f"{name}: expected an integer >= {minimum}, got {raw!r}") from None
    if value < minimum:
        raise pytest.UsageError(f"{name}: expected an integer >= {minimum}, got {value}")
    return value


def parse_positive_float(name: str, raw: object, unit: str = "seconds") -> float:
    try:
        value = float(str(raw))
    except ValueError:
        raise pytest.UsageError(f"{name}: expected a number of {unit} > 0, got {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise pytest.UsageError(f"{name}: expected a number of {unit} > 0, got {value}")
    return value
