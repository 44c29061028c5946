"""Configurations read back from run directories and JSON reports, and merged (scoring/merged.py
scores several together).

A configuration is everything measured under one identity (see store.configuration_identity).
Sources with the same identity pool into one configuration: each adds its trials, and a trial
that reaches the pool twice counts once (run/pooling.py). Several configurations in one report
are scored by the rules in docs/metrics.md, "Several configurations".
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from pytest_agentbench.run.pooling import pool, with_trial_ids
from pytest_agentbench.run.store import (
    RunRecord,
    json_error,
    observation_problem,
    read_run_directory,
)
from pytest_agentbench.scoring.document import build_report
from pytest_agentbench.settings import SandboxLimits, Settings
from pytest_agentbench.tasks.observation import Observation

DOCUMENT_KIND = "configurations"
REPORT_SECTIONS = {"run": dict, "summary": dict, "tasks": list, "observations": list}
GIVE_SOURCE = (
    "give a run directory (pytest --agentbench-dir) or a JSON report "
    "(pytest --agentbench-json, agentbench merge -o)"
)


def identity_key(identity: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]


def settings_from_json(data: Any, source: str) -> Settings:
    """Settings as recorded in run.json or a report; keys from newer versions are ignored.

    Recorded settings that do not make Settings are a ValueError naming SOURCE."""
    if not isinstance(data, dict) or not isinstance(data.get("agent"), str):
        raise ValueError(f"{source}: 'settings' is not a recorded run's settings (no 'agent')")
    known = {f.name for f in fields(Settings)}
    values = {k: v for k, v in data.items() if k in known}
    values["tasks"] = tuple(values.get("tasks") or ())
    values["agent_opts"] = dict(values.get("agent_opts") or {})
    values["json_path"] = Path(values["json_path"]) if values.get("json_path") else None
    try:
        if isinstance(values.get("sandbox_limits"), dict):
            values["sandbox_limits"] = SandboxLimits(**values["sandbox_limits"])
        return Settings(**values)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{source}: recorded 'settings' are not usable ({exc})") from None


@dataclass
class Configuration:
    """One identity's trials, from one or more sources."""

    identity: dict[str, Any]
    settings: Settings
    agent_info: dict[str, Any]
    declared: dict[str, dict[str, Any]]
    observations: list[Observation]
    started_at: str | None = None
    finished_at: str | None = None
    sources: list[str] = field(default_factory=list)
    name: str = ""
    selected: set[str] | None = None  # the tasks the runs asked for; None: not recorded
    anchor: str | None = None  # an anchor arm's seed field (seed_wrong, seed_correct)

    @property
    def key(self) -> str:
        return identity_key(self.identity)

    def label(self) -> str:
        """A readable name: the run's label (Settings.run_label)."""
        return self.settings.run_label()

    def report(self, declared: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
        """The configuration's report, scored against its own tasks or the given suite."""
        report = build_report(
            self.settings,
            self.agent_info,
            declared if declared is not None else self.declared,
            self.observations,
            self.started_at or "",
            self.finished_at or "",
            sandbox=self.identity.get("sandbox"),
            selected=self.selected,
        )
        report["run"].update(
            name=self.name or self.label(),
            identity=self.identity,
            settings=self.settings.to_json(),
            sources=self.sources,
        )
        if self.settings.meter != "off" and "meter" in (self.agent_info or {}):
            from pytest_agentbench.scoring.metering import metering_block

            report["metering"] = metering_block(self.observations, self.agent_info)
        return report


def _declared_from(observations: list[Observation]) -> dict[str, dict[str, Any]]:
    declared: dict[str, dict[str, Any]] = {}
    for obs in observations:
        declared.setdefault(
            obs["task"],
            {k: obs.get(k) for k in ("category", "tags", "fixture_hash", "no_solution")},
        )
    return declared


def from_run_directory(path: Path) -> Configuration:
    return _from_record(read_run_directory(path))


def _from_record(record: RunRecord) -> Configuration:
    path, run = record.path, record.run
    if "identity" not in run or "settings" not in run:
        raise ValueError(f"{path / 'run.json'}: missing 'identity' or 'settings'")
    declared = dict(run.get("tasks") or {}) or _declared_from(record.observations)
    return Configuration(
        identity=run["identity"],
        settings=settings_from_json(run["settings"], str(path / "run.json")),
        agent_info=run.get("agent_info") or {},
        declared=declared,
        observations=record.trials,
        started_at=run.get("started_at"),
        finished_at=run.get("finished_at"),
        sources=[str(path)],
        selected=_selected(run),
    )


def arm_configurations(
    configuration: Configuration, arms: dict[str, Any], anchors: dict[str, str]
) -> list[Configuration]:
    """A run with arms as one configuration per arm (run.json's `arms`: name -> identity,
    `arm_anchors`: anchor arm -> seed field), in recorded order, each named by its arm and
    holding that arm's trials only."""
    return [
        replace(
            configuration,
            identity=identity,
            observations=[o for o in configuration.observations if o.get("arm") == name],
            name=name,
            anchor=anchors.get(name),
        )
        for name, identity in arms.items()
    ]


def _selected(run: dict[str, Any]) -> set[str] | None:
    recorded = run.get("tasks_selected")
    return None if recorded is None else set(recorded)


def _from_report(report: dict[str, Any], source: str) -> Configuration:
    run = report.get("run") or {}
    if "identity" not in run or "settings" not in run:
        raise ValueError(
            f"{source}: the report has no run.identity/run.settings; merge its run directory "
            "instead (written next to it by --agentbench-dir)"
        )
    declared = {
        task["id"]: {k: task.get(k) for k in ("category", "tags", "fixture_hash")}
        for task in report.get("tasks", [])
    }
    return Configuration(
        identity=run["identity"],
        settings=settings_from_json(run["settings"], source),
        agent_info=run.get("agent_info") or {},
        declared=declared,
        observations=pool(with_trial_ids(report["observations"], run.get("run_id") or source)),
        started_at=run.get("started_at"),
        finished_at=run.get("finished_at"),
        sources=[source],
        name=run.get("name", ""),
        selected=_selected(run),
    )


def _report_problem(report: Any) -> str | None:
    """What keeps REPORT from being read as one configuration's JSON report (None if nothing)."""
    if not isinstance(report, dict):
        return f"a JSON object, got {type(report).__name__}"
    missing = [
        name for name, kind in REPORT_SECTIONS.items() if not isinstance(report.get(name), kind)
    ]
    if missing:
        return "no " + ", ".join(repr(name) for name in missing)
    for index, task in enumerate(report["tasks"]):
        if not isinstance(task, dict) or not isinstance(task.get("id"), str):
            return f"tasks[{index}] is not an object with a string 'id'"
    for index, observation in enumerate(report["observations"]):
        problem = observation_problem(observation)
        if problem is not None:
            return f"observations[{index}] is {problem}"
    return None


def read_document(path: Path) -> dict[str, Any]:
    """A JSON report or merged report as written, checked for the sections readers rely on;
    anything else is a ValueError naming the file and what to give instead."""
    if not path.exists():
        raise ValueError(f"{path}: no such run directory or report; {GIVE_SOURCE}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it ({exc.strerror}); {GIVE_SOURCE}") from None
    except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError for non-UTF-8 bytes
        raise ValueError(f"{path}: not a JSON report ({json_error(exc)}); {GIVE_SOURCE}") from None
    several = isinstance(data, dict) and data.get("kind") == DOCUMENT_KIND
    reports = data.get("configurations") if several else [data]
    if not isinstance(reports, list) or not reports:
        raise ValueError(f"{path}: a merged report without 'configurations'; {GIVE_SOURCE}")
    for index, report in enumerate(reports):
        problem = _report_problem(report)
        if problem is not None:
            where = f"configurations[{index}] " if several else ""
            raise ValueError(
                f"{path}: not a pytest-agentbench JSON report ({where}{problem}); {GIVE_SOURCE}"
            )
    document: dict[str, Any] = data
    return document


def load_source(path: Path) -> list[Configuration]:
    """The configurations of a run directory, a JSON report or a merged report."""
    if path.is_dir():
        record = read_run_directory(path)
        arms = record.run.get("arms")
        configuration = _from_record(record)
        if not arms:
            return [configuration]
        return arm_configurations(configuration, arms, record.run.get("arm_anchors") or {})
    return [_from_report(report, str(path)) for report in configurations_of(read_document(path))]


def _merge_two(into: Configuration, other: Configuration) -> None:
    """Pool OTHER into INTO: its trials join (each trial once), its declared and selected
    tasks join theirs (shards of one suite declare the same tasks)."""
    into.observations = pool([*into.observations, *other.observations])
    for task_id, meta in other.declared.items():
        into.declared.setdefault(task_id, meta)
    if into.selected is not None and other.selected is not None:
        into.selected = into.selected | other.selected
    else:
        into.selected = None
    into.sources = into.sources + other.sources
    starts = [s for s in (into.started_at, other.started_at) if s]
    ends = [s for s in (into.finished_at, other.finished_at) if s]
    into.started_at = min(starts) if starts else None
    into.finished_at = max(ends) if ends else None
    if other.settings.repeats > into.settings.repeats:
        into.settings = other.settings


def merge(configurations: list[Configuration]) -> list[Configuration]:
    """Same identity -> one configuration; different identities stay apart, in first-seen order."""
    merged: dict[str, Configuration] = {}
    for config in configurations:
        if config.key in merged:
            _merge_two(merged[config.key], config)
        else:
            merged[config.key] = Configuration(
                identity=config.identity,
                settings=config.settings,
                agent_info=config.agent_info,
                declared=dict(config.declared),
                observations=list(config.observations),
                started_at=config.started_at,
                finished_at=config.finished_at,
                sources=list(config.sources),
                name=config.name,
                selected=config.selected,
                anchor=config.anchor,
            )
    result = list(merged.values())
    _name_uniquely(result)
    return result


def _name_uniquely(configurations: list[Configuration]) -> None:
    labels = [c.name or c.label() for c in configurations]
    for config, label in zip(configurations, labels, strict=True):
        config.name = label if labels.count(label) == 1 else f"{label} #{config.key[:8]}"


def configurations_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-configuration reports of a document, single or several."""
    if document.get("kind") == DOCUMENT_KIND:
        reports: list[dict[str, Any]] = document["configurations"]
        return reports
    return [document]
