"""A finished run's code measures, taken again (`agentbench measure`): from each trial's kept
change (change.patch) and its task's input tree, loaded from the run's task sources.

As retrace does, the latest record of each trial in observations.jsonl gets the new measures
and the file is replaced atomically; a trial that kept no change it can be measured from (an
older run, a task no longer found, a fixture that changed since, a task of its own image with
no Docker engine to read it) keeps what it had. A task of its own image (Harbor) is measured
through a Docker provider made for the command, as a run's trials are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_agentbench.run.store import OBSERVATIONS_FILE, read_observations
from pytest_agentbench.run.trajectories import latest_trials, rewrite_observations, trial_directory
from pytest_agentbench.sandbox.base import SandboxProvider
from pytest_agentbench.sandbox.task_image import TaskImageProvider
from pytest_agentbench.settings import Settings
from pytest_agentbench.suites.catalog import iter_catalog
from pytest_agentbench.tasks.observation import Observation
from pytest_agentbench.trial.artifacts import CHANGE_FILE
from pytest_agentbench.trial.measuring import task_reference, trial_measures


@dataclass
class Remeasured:
    """What a measure did: trials measured, and those left as recorded, with why."""

    measured: list[str] = field(default_factory=list)
    left: dict[str, str] = field(default_factory=dict)  # trial folder -> the reason


def remeasure(
    run_dir: Path, sources: tuple[str, ...], base: Path, settings: Settings
) -> Remeasured:
    """Measure every trial of the run directory again with settings.measure (see the module);
    sources are the run's task sources, relative ones read from base."""
    tasks = {entry.task_id: entry.task for entry in iter_catalog(sources, base) if entry.task}
    observations, _notice = read_observations(run_dir / OBSERVATIONS_FILE)
    done = Remeasured()
    engine = _Engine(settings)
    for observation in latest_trials(observations):
        directory = trial_directory(run_dir, observation)
        task = tasks.get(observation["task"])
        if task is None or task.fixture_hash != observation.get("fixture_hash"):
            why = "its task is not in the sources" if task is None else "its task changed since"
            done.left[directory.name] = why
            continue
        change = kept_change(directory / CHANGE_FILE, observation)
        if change is None:
            done.left[directory.name] = f"it kept no {CHANGE_FILE}"
            continue
        provider = None
        if task.container is not None:
            provider = engine.provider()
            if provider is None:
                done.left[directory.name] = f"its task runs in its own image: {engine.why_not}"
                continue
        observation["measures"], observation["measure_notes"] = trial_measures(
            task, change, settings, provider
        )
        observation["measure_reference"] = task_reference(task, change, settings)
        done.measured.append(directory.name)
    rewrite_observations(run_dir, observations)
    return done


def kept_change(path: Path, observation: Observation) -> str | None:
    """The trial's kept change (change.patch); "" when the run measured it and found no file
    touched (an empty change writes no file); None when it is not known."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        measured = observation.get("measures") or {}
        return "" if measured.get("files_touched") == 0 else None


class _Engine:
    """The Docker provider that tasks of their own image are measured through, made on first
    need; why there is none when no engine answers."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.made: SandboxProvider | None = None
        self.why_not = ""

    def provider(self) -> SandboxProvider | None:
        if self.made is None and not self.why_not:
            try:
                self.made = TaskImageProvider(self.settings.sandbox_limits, None)
            except pytest.UsageError as error:
                self.why_not = str(error)
        return self.made
