"""--agentbench-resume, --agentbench-baseline and --agentbench-cache: trials recorded as scored
under the same identity are not run again.

Resuming continues one run: the controller checks the recorded configuration identity before
anything runs, and a task whose fixture hash changed fails its collection (on whichever
process collects) with the recorded and current hashes named. A baseline is a finished run of
another study: each of its scored trials stands in for the same task and repeat of the arm
(or plain configuration) whose identity it has -- a vanilla arm's trials serve the next study's
vanilla arm, and a plain run's too -- while the task's fixture hash is the same; anything else
of it is simply not used. The cache's published trials serve the vanilla configuration alike
(run/cache.py). The reusable cells reach xdist workers through workerinput, so only
the controller ever touches the directories.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from typing import Any

import pytest

from pytest_agentbench.fs.wording import plural
from pytest_agentbench.plan.arm_trials import arm_name
from pytest_agentbench.plan.collect import TaskItem
from pytest_agentbench.run.store import (
    RunRecord,
    identity_differences,
    stops_of,
    task_hash_differences,
)
from pytest_agentbench.tasks.observation import (
    REPORT_ATTRIBUTE,
    Observation,
    observation_slot_task,
    slot_task,
)

WORKER_INPUT = "agentbench_resume"
SEPARATOR = "\0"
REFUSAL = "--agentbench-resume"


def refuse_other_identity(record: RunRecord, identity: dict[str, Any]) -> None:
    differences = identity_differences(record.identity, identity)
    if differences:
        raise pytest.UsageError(
            f"--agentbench-resume {record.path}: the recorded run measured a different "
            "configuration; differing fields:\n  "
            + "\n  ".join(differences)
            + "\nresume with the recorded settings, or start a new run directory"
        )


def _reused(observation: Observation, source: str) -> Observation:
    """The recorded Observation, marked with the run directory it is reused from."""
    copy = observation.copy()
    copy["reused"] = source
    return copy


def _from_study(observation: Observation, source: str) -> Observation:
    """A trial of another study's run: marked for the report ("vanilla reused": it was not
    interleaved with this run's trials), the mark kept in this run's record."""
    copy = _reused(observation, source)
    copy.setdefault("reused_from", source)
    return copy


def _cell(slot: str, repeat: int) -> str:
    return f"{slot}{SEPARATOR}{repeat}"


def _in_arm(observation: Observation, arm: str | None) -> Observation:
    """A baseline's trial as a trial of this run's ARM (a plain run's serves vanilla)."""
    observation.pop("arm", None)
    if arm is not None:
        observation["arm"] = arm
    return observation


class Resume:
    """Marks reusable items; on the controller also hands the records to xdist workers."""

    def __init__(
        self,
        sources: dict[str, str],
        cells: dict[str, Observation],
        hashes: dict[str, str],
    ) -> None:
        self.sources = sources  # run directory -> "resume" | "baseline" | "cache", in order
        # "task\0repeat" -> recorded scored Observation (its `reused`: where); the cache's are
        # keyed "task\0repeat\0fixture hash", one per version of the task
        self.cells = cells
        self.hashes = hashes  # the resumed run's task hashes: a changed task is refused
        self.notice: str | None = None
        self.reused: Counter[str] = Counter()  # run directory -> trials reused from it
        self.config: pytest.Config | None = None
        self.evidence: list[Observation] = []  # its stops and infrastructure failures
        self.cache: str | None = None  # the --agentbench-cache directory read, if any

    @pytest.hookimpl
    def pytest_configure(self, config: pytest.Config) -> None:
        self.config = config

    @classmethod
    def from_record(cls, record: RunRecord) -> Resume:
        cells = {
            _cell(observation_slot_task(o), o["repeat"]): _reused(o, str(record.path))
            for o in record.observations
            if o.get("status") == "scored"
        }
        resume = cls({str(record.path): "resume"}, cells, record.task_hashes())
        resume.notice = record.notice
        resume.evidence = stops_of(record)
        return resume

    def add_baseline(self, record: RunRecord, identities: dict[str | None, dict[str, Any]]) -> None:
        """The scored trials of RECORD whose identity is one of IDENTITIES (this run's, by arm
        name; None without arms), for the cells nothing reuses yet."""
        self.sources[str(record.path)] = "baseline"
        recorded_arms = record.run.get("arms") or {}
        for observation in record.observations:
            if observation.get("status") != "scored":
                continue
            arm = observation.get("arm")
            recorded = recorded_arms.get(arm, record.identity) if arm else record.identity
            for name, identity in identities.items():
                key = _cell(slot_task(observation["task"], name), observation["repeat"])
                if key not in self.cells and not identity_differences(recorded, identity):
                    self.cells[key] = _in_arm(_from_study(observation, str(record.path)), name)

    def add_cached(self, cache: str, observations: list[Observation], arm: str | None) -> None:
        """Trials CACHE published of this run's vanilla identity (ARM: vanilla, None without
        arms) for the cells nothing reuses yet, the first published of each task version."""
        self.cache = cache
        for observation in observations:
            source = observation["reused_from"]
            self.sources.setdefault(source, "cache")
            cell = _cell(slot_task(observation["task"], arm), observation["repeat"])
            key = f"{cell}{SEPARATOR}{observation.get('fixture_hash')}"
            self.cells.setdefault(key, _in_arm(_from_study(observation, source), arm))

    @classmethod
    def from_workerinput(cls, data: dict[str, Any]) -> Resume:
        return cls(data["sources"], data["cells"], data["hashes"])

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKER_INPUT] = {
            "sources": self.sources,
            "cells": self.cells,
            "hashes": self.hashes,
        }

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        report = yield
        if not report.passed:
            return report
        current = {
            item.task_id: item.task.fixture_hash
            for item in report.result
            if isinstance(item, TaskItem) and item.task is not None
        }
        differences = task_hash_differences(self.hashes, current)
        if differences:
            resumed = next(path for path, kind in self.sources.items() if kind == "resume")
            report.outcome = "failed"
            report.longrepr = (
                f"{REFUSAL} {resumed}: the task changed since it was recorded\n  "
                + "\n  ".join(differences)
                + "\nrestore the task, or start a new run directory"
            )
            report.result = []
        return report

    @pytest.hookimpl
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Under xdist a worker's collection error does not stop the run: stop it here."""
        text = report.longrepr if isinstance(report.longrepr, str) else ""
        dsession = self.config.pluginmanager.get_plugin("dsession") if self.config else None
        if report.failed and text.startswith(REFUSAL) and dsession is not None:
            dsession.shouldstop = text.splitlines()[0]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            if not isinstance(item, TaskItem) or item.task is None:
                continue
            cell = _cell(slot_task(item.task_id, arm_name(item.arm)), item.repeat)
            for key in (cell, f"{cell}{SEPARATOR}{item.task.fixture_hash}"):
                recorded = self.cells.get(key)
                if recorded is not None and recorded.get("fixture_hash") == item.task.fixture_hash:
                    item.reused = recorded
                    break

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        observation = getattr(report, REPORT_ATTRIBUTE, None)
        if observation and observation.get("reused"):
            self.reused[observation["reused"]] += 1

    @pytest.hookimpl
    def pytest_report_header(self) -> list[str]:
        held = Counter(cell["reused"] for cell in self.cells.values())
        lines = []
        if self.cache is not None:
            cached = [path for path, kind in self.sources.items() if kind == "cache"]
            trials = plural(sum(held[path] for path in cached), "scored vanilla trial")
            lines.append(
                f"agentbench cache: {self.cache} holds {trials} of this configuration "
                f"(from {plural(len(cached), 'run')})"
            )
        for path, kind in self.sources.items():
            if kind == "cache":
                continue
            if kind == "resume":
                lines.append(
                    f"agentbench resume: {plural(held[path], 'scored trial')} recorded in {path}"
                )
            else:
                matching = plural(held[path], "scored trial")
                lines.append(f"agentbench baseline: {matching} of {path} match this run")
        if self.notice:
            lines.append(f"agentbench resume: {self.notice}")
        return lines

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for path, kind in self.sources.items():
            if kind == "cache" and not self.reused[path]:
                continue  # one of many runs in the cache: only those that served are named
            reused = plural(self.reused[path], "trial")
            terminalreporter.write_line(f"agentbench {kind}: {reused} reused from {path}")
