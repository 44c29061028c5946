"""Run directories and reports read for the viewer: their configurations scored into one
document, each trial's folder found again, and a version that changes whenever a run writes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentbench.judge.judging import JUDGEMENTS_FILE, REVIEWS_FILE, SELECTION_FILE
from pytest_agentbench.run.store import OBSERVATIONS_FILE, RUN_FILE, read_run_file
from pytest_agentbench.run.trajectories import trial_directory
from pytest_agentbench.scoring.configurations import (
    Configuration,
    configurations_of,
    load_source,
    merge,
    read_document,
)
from pytest_agentbench.scoring.merged import build_document
from pytest_agentbench.tasks.observation import Observation

# A run directory's files whose change means a new snapshot
WATCHED = (RUN_FILE, OBSERVATIONS_FILE, SELECTION_FILE, JUDGEMENTS_FILE, REVIEWS_FILE)


@dataclass
class Loaded:
    """What one look at the sources found: the document, one report per configuration with
    its key (c0, c1, ...) for URLs and its configuration, and the run directories by run id."""

    document: dict[str, Any]
    reports: list[dict[str, Any]]
    keys: list[str]
    configurations: list[Configuration]
    run_dirs: dict[str, Path] = field(default_factory=dict)

    def report(self, key: str) -> dict[str, Any]:
        return self.reports[self.keys.index(key)]

    def configuration(self, key: str) -> Configuration:
        return self.configurations[self.keys.index(key)]

    def pairs(self) -> list[tuple[str, str]]:
        """The ordered pairs of configurations that can be compared (rebuilt from the
        sources: a report too old to rebuild has none)."""
        if len(self.configurations) != len(self.keys):
            return []
        return [(a, b) for a in self.keys for b in self.keys if a != b]

    def trial_folder(self, observation: Observation) -> Path | None:
        return trial_folder(self.run_dirs, observation)


def trial_folder(run_dirs: dict[str, Path], observation: Observation) -> Path | None:
    """The trial's folder of artifacts, when its run directory is at hand and has one."""
    run_id = str(observation.get("trial_id") or "").partition("/")[0]
    run_dir = run_dirs.get(run_id)
    if run_dir is None:
        return None
    folder = trial_directory(run_dir, observation)
    return folder if folder.is_dir() else None


def _run_dirs(paths: list[Path], reports: list[dict[str, Any]]) -> dict[str, Path]:
    """Run id -> directory: those named, and those a merged report names that still exist."""
    candidates = [p for p in paths if p.is_dir()]
    for report in reports:
        candidates += [Path(s) for s in report["run"].get("sources") or [] if Path(s).is_dir()]
    found: dict[str, Path] = {}
    for directory in candidates:
        if (directory / RUN_FILE).is_file():
            run_id = read_run_file(directory).get("run_id")
            if isinstance(run_id, str):
                found.setdefault(run_id, directory)
    return found


def load(paths: list[Path]) -> Loaded:
    """Every source's configurations, those of one identity merged, scored as `agentbench
    report` scores them. One JSON report is shown as it was written (it may predate the
    fields a configuration is rebuilt from: then nothing of it can be compared)."""
    if len(paths) == 1 and paths[0].is_file():
        document = read_document(paths[0])
        try:
            configurations = merge(load_source(paths[0]))
        except ValueError:
            configurations = []
    else:
        configurations = merge([c for path in paths for c in load_source(path)])
        document = build_document(configurations)
    reports = configurations_of(document)
    return Loaded(
        document=document,
        reports=reports,
        keys=[f"c{i}" for i in range(len(reports))],
        configurations=configurations,
        run_dirs=_run_dirs(paths, reports),
    )


def version(paths: list[Path]) -> str:
    """Changes whenever a source file a view reads changes (size or time), so a page can ask
    cheaply whether to load again: a run directory's record, and what its judges wrote."""
    stamp = hashlib.sha256()
    for path in paths:
        files = [path / name for name in WATCHED] if path.is_dir() else [path]
        for file in files:
            try:
                info = file.stat()
            except OSError:
                stamp.update(f"{file}:-".encode())
                continue
            stamp.update(f"{file}:{info.st_size}:{info.st_mtime_ns}".encode())
    return stamp.hexdigest()[:16]
