"""--agentbench-keep: a trial's final workspace, kept in the run directory for inspection.

The workspace is read on the process that ran the trial, before its sandbox is removed, and the
copy is handed to the file helper (filework), so the disk is waited for off the trial's path.
Symlinks are kept as symlinks and never followed; directories, empty ones too, are kept; other
entries (sockets, fifos, devices) and whatever goes past the size bounds are listed, with the
reason, in ``workspace-omitted.txt`` beside the copy instead of being copied (so are entries
whose path in the run directory would pass PATH_MAX). Modes and times
are not kept (grading compares neither). Workers write into the shared run directory
themselves: a kept tree never travels on a report.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pytest_agentbench.fs import fdtree, names
from pytest_agentbench.fs.filework import make_dir_later, symlink_later, write_later
from pytest_agentbench.trial.artifacts import TRIALS_DIR, trial_dir_name

KEPT_DIR = "workspace"
OMITTED_FILE = "workspace-omitted.txt"
FILE_LIMIT = 1024 * 1024  # a larger file is listed, not copied
TRIAL_LIMIT = 8 * 1024 * 1024  # bytes copied per trial; the rest is listed
ENTRY_LIMIT = 10_000  # entries (files, directories, links) copied per trial
PATH_LIMIT = 4096  # Linux's PATH_MAX, with the terminating byte


def wants(mode: str, final_exact: bool) -> bool:
    """Whether a trial that ended so is kept: all, or failed (not exact at the final round)."""
    return mode == "all" or (mode == "failed" and not final_exact)


class WorkspaceKeeper:
    """Copies final workspaces to <run dir>/trials/<task>-r<repeat>/workspace/."""

    def __init__(self, mode: str, run_dir: Path) -> None:
        self.mode = mode
        self.trials = run_dir / TRIALS_DIR

    def keep(self, task_id: str, repeat: int, workspace: Path, final_exact: bool) -> None:
        """Called by the trial with its final workspace, before the sandbox goes away."""
        if not wants(self.mode, final_exact):
            return
        trial_dir = self.trials / trial_dir_name(task_id, repeat)
        destination = trial_dir / KEPT_DIR
        if destination.exists() or destination.is_symlink():  # an earlier run of this cell
            shutil.rmtree(destination, ignore_errors=True)
        (trial_dir / OMITTED_FILE).unlink(missing_ok=True)
        omitted = copy_tree(workspace, destination)
        if omitted:
            write_later(trial_dir / OMITTED_FILE, "".join(f"{line}\n" for line in omitted).encode())


def copy_tree(source: Path, destination: Path) -> list[str]:
    """Hand a bounded copy of source to the file helper; what was left out, one line each
    (names in the encoding of pytest_agentbench.fs.names). The walk is fdtree's: any depth, any
    name, any mode, nothing special opened, no symlink followed."""
    omitted: list[str] = []
    copied = entries = 0
    make_dir_later(destination)
    try:
        for found in fdtree.walk(str(source)):
            rel = names.encode(found.rel)
            if entries >= ENTRY_LIMIT:
                omitted.append(f"{rel}: over the limit of {ENTRY_LIMIT} entries per trial")
                continue
            entries += 1
            target = destination / os.fsdecode(found.rel)
            if len(os.fsencode(target)) >= PATH_LIMIT:  # the helper writes by whole paths
                omitted.append(f"{rel}: its path in the run directory is too long to write")
                continue
            try:
                if found.kind == fdtree.SYMLINK:
                    symlink_later(target, os.fsencode(os.readlink(found.name, dir_fd=found.dir_fd)))
                elif found.kind == fdtree.DIR:
                    make_dir_later(target)
                elif found.kind == fdtree.UNREADABLE:
                    omitted.append(f"{rel}/: not readable")
                elif found.kind != fdtree.FILE:
                    omitted.append(f"{rel}: not a regular file, directory or symlink")
                else:
                    fd = fdtree.open_file(found.dir_fd, found.name)
                    try:
                        data, size = fdtree.read_prefix(fd, min(FILE_LIMIT, TRIAL_LIMIT - copied))
                    finally:
                        os.close(fd)
                    if size > FILE_LIMIT:
                        omitted.append(f"{rel}: {size} bytes, over the limit of {FILE_LIMIT}")
                    elif copied + size > TRIAL_LIMIT:
                        omitted.append(f"{rel}: {size} bytes, over the {TRIAL_LIMIT} per trial")
                    else:
                        copied += len(data)
                        write_later(target, data)
            except OSError as error:
                omitted.append(f"{rel}: not readable ({error.strerror or error})")
    except OSError as error:  # the workspace itself (gone, or changed under the walk)
        omitted.append(f"./: not readable ({error.strerror or error})")
    return sorted(omitted)
