"""The controller-only reporter: gathers Observations from reports, prints and writes results.

Under xdist the controller collects nothing, so workers relay their declared tasks and agent
facts through ``config.workeroutput`` (see WorkerRelay) and the Observations ride on reports.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.collect import TaskItem
from pytest_agentbench.fixtures import process_agent
from pytest_agentbench.observation import REPORT_ATTRIBUTE, Observation
from pytest_agentbench.settings import Settings
from pytest_agentbench.store import now

DECLARED = "agentbench_declared"
AGENT_INFO = "agentbench_agent_info"


def declared_tasks(items: list[pytest.Item]) -> dict[str, dict[str, Any]]:
    """Task id -> metadata for every task with at least one selected item."""
    declared: dict[str, dict[str, Any]] = {}
    for item in items:
        if not isinstance(item, TaskItem) or item.task_id in declared:
            continue
        task = item.task
        declared[item.task_id] = {
            "category": task.category if task else "",
            "tags": list(task.tags) if task else [],
            "fixture_hash": task.fixture_hash if task else None,
        }
    return declared


def agent_info(config: pytest.Config, settings: Settings) -> dict[str, Any]:
    return process_agent(config, settings).info()


class WorkerRelay:
    """On an xdist worker: send what only workers know to the controller."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        workeroutput = self.config.workeroutput  # type: ignore[attr-defined]
        workeroutput[DECLARED] = declared_tasks(session.items)

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = self.config.workeroutput  # type: ignore[attr-defined]
        workeroutput[AGENT_INFO] = agent_info(self.config, self.settings)


class AgentbenchReporter:
    """Registered on the controller only (serial runs: the only process)."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.declared: dict[str, dict[str, Any]] = {}
        self.observations: dict[tuple[str, int], Observation] = {}
        self.agent_info: dict[str, Any] | None = None
        self.started_at = now()
        self.report: dict[str, Any] | None = None
        self.session: pytest.Session | None = None

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.declared = declared_tasks(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        for task_id, meta in (output.get(DECLARED) or {}).items():
            self.declared.setdefault(task_id, meta)
        if self.agent_info is None and output.get(AGENT_INFO):
            self.agent_info = output[AGENT_INFO]

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        observation = getattr(report, REPORT_ATTRIBUTE, None)
        if observation is None:
            return
        self.observations[(observation["task"], observation["repeat"])] = observation
        if observation["status"] == "provider_stop" and self.session is not None:
            self.session.shouldstop = f"{report.nodeid}: provider stop: {observation['cause']}"

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:
            return
        from pytest_agentbench.report.document import build_report, write_report
        from pytest_agentbench.sandbox import provider_for

        info = self.agent_info or agent_info(self.config, self.settings)
        self.report = build_report(
            self.settings,
            info,
            self.declared,
            list(self.observations.values()),
            self.started_at,
            now(),
            sandbox=provider_for(self.config, self.settings).describe(),
        )
        self.config.hook.pytest_agentbench_report_json(config=self.config, report=self.report)
        if self.settings.json_path is not None:
            write_report(self.report, self.settings.json_path)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.report is None:
            return
        from pytest_agentbench.report.terminal import render

        terminalreporter.write_sep("=", "agentbench")
        for line in render(self.report):
            terminalreporter.write_line(line)
        if self.settings.json_path is not None:
            terminalreporter.write_line(f"JSON report: {self.settings.json_path}")
