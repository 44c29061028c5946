"""--agentbench-resume: trials recorded as scored under the same identity are not run again.

The controller reads the record and checks the configuration identity before anything runs;
the reusable cells and the recorded task hashes reach xdist workers through workerinput, so
only the controller ever touches the directory. A task whose fixture hash changed fails its
collection (on whichever process collects) with the recorded and current hashes named.
"""

from __future__ import annotations

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


class Resume:
    """Marks reusable items; on the controller also hands the record to xdist workers."""

    def __init__(self, source: str, cells: dict[str, Observation], hashes: dict[str, str]):
        self.source = source
        self.cells = cells  # "task\0repeat" -> recorded scored Observation
        self.hashes = hashes
        self.notice: str | None = None
        self.reused = 0
        self.config: pytest.Config | None = None
        self.evidence: list[Observation] = []  # its stops and infrastructure failures

    @pytest.hookimpl
    def pytest_configure(self, config: pytest.Config) -> None:
        self.config = config

    @classmethod
    def from_record(cls, record: RunRecord) -> Resume:
        cells = {
            f"{observation_slot_task(o)}{SEPARATOR}{o['repeat']}": _reused(o, str(record.path))
            for o in record.observations
            if o.get("status") == "scored"
        }
        resume = cls(str(record.path), cells, record.task_hashes())
        resume.notice = record.notice
        resume.evidence = stops_of(record)
        return resume

    @classmethod
    def from_workerinput(cls, data: dict[str, Any]) -> Resume:
        return cls(data["source"], data["cells"], data["hashes"])

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKER_INPUT] = {
            "source": self.source,
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
            report.outcome = "failed"
            report.longrepr = (
                f"{REFUSAL} {self.source}: the task changed since it was recorded\n  "
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
            slot = slot_task(item.task_id, arm_name(item.arm))
            recorded = self.cells.get(f"{slot}{SEPARATOR}{item.repeat}")
            if recorded is not None and recorded.get("fixture_hash") == item.task.fixture_hash:
                item.reused = recorded

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        observation = getattr(report, REPORT_ATTRIBUTE, None)
        if observation and observation.get("reused"):
            self.reused += 1

    @pytest.hookimpl
    def pytest_report_header(self) -> list[str]:
        recorded = plural(len(self.cells), "scored trial")
        lines = [f"agentbench resume: {recorded} recorded in {self.source}"]
        if self.notice:
            lines.append(f"agentbench resume: {self.notice}")
        return lines

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_line(
            f"agentbench resume: {plural(self.reused, 'trial')} reused from {self.source}"
        )
