"""Per-trial cgroups for the bwrap sandbox: the pids and memory limits Docker gets from its engine.

bubblewrap has no resource limits of its own. Where this process may create cgroups (root, or a
delegated cgroup v2 subtree) a trial gets a child cgroup in the pids and memory controllers, and
the sandbox enters it before exec'ing bwrap, so every descendant of the agent is counted.
Elsewhere the limits are reported as not enforced rather than silently assumed.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _own_cgroup_paths() -> dict[str, str]:
    """controller name ('' for the v2 hierarchy) -> this process's cgroup path."""
    paths: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            paths[controller] = path
    return paths


def _controller_dirs(controller: str, own: dict[str, str]) -> Path | None:
    """The directory under which a child cgroup with this controller can be made, if any."""
    v1 = CGROUP_ROOT / controller
    if controller in own and (v1 / "cgroup.procs").exists():
        return v1 / own[controller].lstrip("/")
    if "" in own and (CGROUP_ROOT / "cgroup.controllers").exists():
        parent = CGROUP_ROOT / own[""].lstrip("/")
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        return parent if controller in enabled else None
    return None


def own_cgroup_dir(controller: str) -> Path | None:
    """This process's own cgroup in that controller's hierarchy, under which a child cgroup is
    made; None when there is no such hierarchy to make one in."""
    try:
        return _controller_dirs(controller, _own_cgroup_paths())
    except OSError:
        return None


@dataclass
class TrialCgroup:
    """The cgroup directories (one per hierarchy) that hold one trial's processes."""

    dirs: list[Path]

    @property
    def procs_files(self) -> list[Path]:
        return [d / "cgroup.procs" for d in self.dirs]

    def remove(self) -> None:
        """rmdir each cgroup; the kernel refuses while a process is still inside, so retry."""
        for directory in self.dirs:
            pause = 0.0005
            for _ in range(20):  # at most ~1 s in all
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    _kill_members(directory)
                    time.sleep(pause)
                    pause = min(pause * 2, 0.2)


def _kill_members(directory: Path) -> None:
    with contextlib.suppress(OSError):
        for pid in (directory / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(pid), 9)


def create_trial_cgroup(name: str, pids_max: int, memory_bytes: int) -> TrialCgroup | None:
    """A fresh cgroup limiting pids and memory, or None when this process may not make one."""
    try:
        own = _own_cgroup_paths()
    except OSError:
        return None
    limits = {
        "pids": {"pids.max": str(pids_max)},
        "memory": {
            "memory.limit_in_bytes": str(memory_bytes),  # v1
            "memory.max": str(memory_bytes),  # v2
            "memory.swap.max": "0",  # v2: the limit is not dodged by swapping
        },
    }
    made: dict[Path, None] = {}
    try:
        for controller, files in limits.items():
            parent = _controller_dirs(controller, own)
            if parent is None:
                raise PermissionError(f"no {controller} cgroup hierarchy")
            directory = parent / name
            if directory not in made:
                directory.mkdir()
                made[directory] = None
            written = False
            for filename, value in files.items():
                if (directory / filename).exists():
                    (directory / filename).write_text(value)
                    written = True
            if not written:
                raise PermissionError(f"{directory}: no {controller} limit file")
    except OSError:
        TrialCgroup(list(made)).remove()
        return None
    return TrialCgroup(list(made))
