"""How many trials this machine's sandboxes hold at once: the bound on
--agentbench-concurrency, asked once before the first trial.

Each bound comes with its reason, for the run header:
- file descriptors: a trial in flight holds its agent's pipes, an exit descriptor, its
  meter connection and the files being read; the soft limit is raised toward the hard one
  first, as servers do, and what is left bounds the trials;
- processes: where this process's cgroup caps its pids, a trial may take its --sandbox-pids
  and its own thread;
- docker: the engine's memory over --docker-memory per trial, since every container may use
  its whole limit and an overcommitted engine kills them at random; with a pool of engines
  (--docker-host), the slots of all of them.
"""

from __future__ import annotations

import contextlib
import resource
from pathlib import Path
from typing import Any

from pytest_agentbench.sandbox.base import SandboxProvider
from pytest_agentbench.settings import SandboxLimits

FDS_PER_TRIAL = 16  # descriptors a trial in flight may hold (about 4 measured under bwrap)
FDS_KEPT = 256  # for pytest, xdist, the meter and the report writers
CGROUP_ROOT = Path("/sys/fs/cgroup")


def fd_room(wanted: int) -> int:
    """Trials the descriptor limit allows, after raising the soft limit as far as needed."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = FDS_KEPT + wanted * FDS_PER_TRIAL
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max((soft - FDS_KEPT) // FDS_PER_TRIAL, 1)


def pids_room(limits: SandboxLimits) -> int | None:
    """Trials the pids limit of this process's cgroup (v2) leaves room for; None: no limit."""
    try:
        line = Path("/proc/self/cgroup").read_text().splitlines()[0]
        own = CGROUP_ROOT / line.split(":", 2)[2].lstrip("/")
        maximum = (own / "pids.max").read_text().strip()
        current = int((own / "pids.current").read_text())
    except (OSError, IndexError, ValueError):
        return None
    if maximum == "max":
        return None
    return max((int(maximum) - current) // (limits.pids + 1), 1)


def docker_room(provider: Any, limits: SandboxLimits) -> int | None:
    """Containers of --docker-memory each that the engine's memory holds."""
    try:
        total = int(provider.client.info()["MemTotal"])
    except Exception:  # an engine that does not say: no bound from it
        return None
    return max(total // limits.memory_bytes, 1)


def trial_capacity(
    provider: SandboxProvider, limits: SandboxLimits, wanted: int, processes: int = 1
) -> tuple[int, str | None]:
    """The trials in flight this process may hold, at most wanted, and what bounds it below
    wanted (None: nothing); processes: how many processes (xdist workers) share the machine's
    pids and the engine's memory."""
    bounds = [(fd_room(wanted), "open files (ulimit -n)")]
    pids = pids_room(limits)
    if pids is not None:
        bounds.append(
            (max(pids // processes, 1), f"the cgroup's pids.max at --sandbox-pids {limits.pids}")
        )
    pool = getattr(provider, "placing", None)
    if pool is not None:  # the workers share the pool's slots: each waits for a free one
        bounds.append((sum(pool.engines.values()), "the slots of the pool's engines"))
    elif provider.kind == "docker":
        memory = docker_room(provider, limits)
        if memory is not None:
            share = max(memory // processes, 1)
            bounds.append((share, f"the Docker engine's memory at --docker-memory {limits.memory}"))
    room, why = min(bounds, key=lambda bound: bound[0])
    return (wanted, None) if room >= wanted else (room, why)
