"""The controller-only reporter: gathers Observations from reports, prints and writes results.

Under xdist the controller collects nothing, so workers relay their declared and selected
tasks and agent facts through ``config.workeroutput`` (see WorkerRelay) and the Observations
ride on reports; the task sets ride on each worker's first report too, for a run stopped at
once, which never hears of its workers' end.

The declared tasks are those of the task sources, taken from the collected items before
anything deselects them (-k, -m, --deselect, --agentbench-shard): coverage counts against
them. The selected tasks are those with an item left to run.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.fs.wording import plural
from pytest_agentbench.plan.arm_trials import run_arms
from pytest_agentbench.plan.collect import TaskItem
from pytest_agentbench.run.plugins import RESUME_NAME, STOP_NAME
from pytest_agentbench.run.stop import resume_command
from pytest_agentbench.run.store import cell_key, now
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.observation import (
    INFRASTRUCTURE,
    PROVIDER_STOP,
    REPORT_ATTRIBUTE,
    SCORED,
    Observation,
)
from pytest_agentbench.trial.process import agent_info, process_agent

DECLARED = "agentbench_declared"
FAILED_LISTED = 20
"""By default, the short summary lists this many failed trials; a line says how to see all."""
PYTEST_REPORTCHARS = "fE"
"""pytest's own default for -r: any other value asks for its own list, in full."""
SELECTED = "agentbench_selected"
AGENT_INFO = "agentbench_agent_info"
TASK_SETS = "agentbench_task_sets"  # the report attribute of a worker's first report


def declared_tasks(items: list[pytest.Item]) -> dict[str, dict[str, Any]]:
    """Task id -> metadata for every task with at least one of the given items."""
    declared: dict[str, dict[str, Any]] = {}
    for item in items:
        if not isinstance(item, TaskItem) or item.task_id in declared:
            continue
        task = item.task
        declared[item.task_id] = {
            "category": task.category if task else "",
            "tags": list(task.tags) if task else [],
            "fixture_hash": task.fixture_hash if task else None,
            "no_solution": task.no_solution if task else False,
        }
    return declared


def selected_tasks(items: list[pytest.Item]) -> list[str]:
    """The task ids with an item left to run, sorted."""
    return sorted({item.task_id for item in items if isinstance(item, TaskItem)})


class TaskSets:
    """Records the declared tasks before any deselection, and the selected ones after it."""

    def __init__(self) -> None:
        self.declared: dict[str, dict[str, Any]] = {}
        self.selected: set[str] = set()

    def add(self, sets: dict[str, Any]) -> None:
        """A worker's task sets (every worker collects the same)."""
        for task_id, meta in (sets.get(DECLARED) or {}).items():
            self.declared.setdefault(task_id, meta)
        self.selected.update(sets.get(SELECTED) or ())

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """First of the item hooks: pytest's -k, -m and --deselect and the shard come later."""
        self.declared = declared_tasks(items)

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.selected = set(selected_tasks(session.items))


class WorkerRelay(TaskSets):
    """On an xdist worker: send what only workers know to the controller."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        super().__init__()
        self.config = config
        self.settings = settings
        self.relayed = False

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        super().pytest_collection_finish(session)
        workeroutput = self.config.workeroutput  # type: ignore[attr-defined]
        workeroutput[DECLARED] = self.declared
        workeroutput[SELECTED] = sorted(self.selected)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Before xdist sends it: the first report carries the task sets."""
        if not self.relayed:
            self.relayed = True
            setattr(report, TASK_SETS, {DECLARED: self.declared, SELECTED: sorted(self.selected)})

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = self.config.workeroutput  # type: ignore[attr-defined]
        workeroutput[AGENT_INFO] = agent_info(self.config, self.settings)


END_OF_RUN_MODULES = (
    "pytest_agentbench.scoring.document",
    "pytest_agentbench.report.terminal",
    "tabulate",
    "numpy.random",  # numpy loads these on first use: the bootstrap's generator,
    "numpy.ma",  # np.percentile's masked arrays
)
"""What the summary imports once the last trial has ended (numpy among them): about 0.15 s."""


def import_meanwhile(modules: Sequence[str]) -> None:
    """Import modules on a thread of their own while the trials run (whose harness mostly
    waits: on agents, workers, verifiers), so the summary does not wait for them. None of
    them is imported by a trial, and the package has no import circles to cross."""

    def load() -> None:
        for name in modules:
            importlib.import_module(name)

    threading.Thread(target=load, name="agentbench-import", daemon=True).start()


class AgentbenchReporter(TaskSets):
    """Registered on the controller only (serial runs: the only process)."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        super().__init__()
        self.config = config
        self.settings = settings
        self.observations: dict[tuple[str, int], Observation] = {}  # by store.cell_key
        self.agent_info: dict[str, Any] | None = None
        self.started_at = now()
        self.report: dict[str, Any] | None = None
        self.session: pytest.Session | None = None
        self.plan_printed = False
        self.hidden_failures: list[Any] = []
        self.failures: list[Any] = []  # every trial that failed as an outcome, while one is hidden

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        self.add(output)
        if self.agent_info is None and output.get(AGENT_INFO):
            self.agent_info = output[AGENT_INFO]

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.add(getattr(report, TASK_SETS, None) or {})
        observation = getattr(report, REPORT_ATTRIBUTE, None)
        if observation is None:
            return
        self.observations[cell_key(observation)] = observation
        if observation["status"] == "provider_stop" and self.session is not None:
            self.session.shouldstop = f"{report.nodeid}: provider stop: {observation['cause']}"

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Progress as letters alone, as under -n: a line per task would not fit a CI log."""
        self.session = session
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.showfspath = False

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """As the trials begin: after collection, which the imports would otherwise slow."""
        if not self.config.option.collectonly:
            import_meanwhile(END_OF_RUN_MODULES)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly:
            return
        from pytest_agentbench.sandbox import provider_for
        from pytest_agentbench.scoring.document import build_report, write_report

        info = self.agent_info or agent_info(self.config, self.settings)
        resume = self.config.pluginmanager.get_plugin(RESUME_NAME)
        evidence = resume.evidence if resume is not None else []  # stops this run re-ran
        sandbox = provider_for(self.config, self.settings).describe()
        observations = [*self.observations.values(), *evidence]
        self.report = build_report(
            self.settings,
            info,
            self.declared,
            observations,
            self.started_at,
            now(),
            sandbox=sandbox,
            selected=self.selected,
        )
        arms = run_arms(self.config)
        if arms is not None:
            from pytest_agentbench.scoring.arm_compare import run_arms_block

            delivery = process_agent(self.config, self.settings).delivery_report()
            self.report["arms"] = run_arms_block(
                arms, self.settings, info, sandbox, self.declared, observations, self.selected
            )
            self.report["arms"]["delivery"] = delivery
        self.config.hook.pytest_agentbench_report_json(config=self.config, report=self.report)
        if self.settings.json_path is not None:
            write_report(self.report, self.settings.json_path)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        """Under xdist the plan is printed when the first worker has collected (every worker
        collects the same items), since the controller collects nothing itself."""
        if self.plan_printed:
            return
        self.plan_printed = True
        from pytest_agentbench.report.plan import plan_lines

        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.ensure_newline()
            for line in plan_lines(self.config, ids):
                terminal.write_line(line)

    @pytest.hookimpl
    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        observation = getattr(report, REPORT_ATTRIBUTE, None)
        if report.when != "call" or not observation:
            return None
        from pytest_agentbench.report.letters import trial_status

        return trial_status(report, observation)

    def details_asked(self) -> bool:
        """-v or an explicit --tb: the failed trials' diffs and the full table."""
        return self.config.get_verbosity() > 0 or self.config.option.tbstyle != "auto"

    def listed_failures(self) -> int | None:
        """How many failed trials the short summary lists (None: all, as -v, --tb or an
        explicit -r asks)."""
        default = self.config.option.reportchars == PYTEST_REPORTCHARS
        return FAILED_LISTED if default and not self.details_asked() else None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, object, object]:
        """Around pytest's own summary: failed trials are outcomes, not bugs, so by default
        each is its one FAILED line (pytest's FAILURES section, printed before the plain
        summary hooks, skips them; the first of those puts them back for the short summary
        printed after them), the first FAILED_LISTED of them; and the agentbench block
        comes last."""
        if not self.details_asked():
            failed = terminalreporter.stats.get("failed", [])
            self.hidden_failures = [r for r in failed if _is_trial_outcome(r)]
            if self.hidden_failures:
                terminalreporter.stats["failed"] = [r for r in failed if not _is_trial_outcome(r)]
        try:
            result = yield
        finally:
            self.pytest_terminal_summary_restore(terminalreporter)
            unlisted = self.unlist_failures(terminalreporter)
        if unlisted:
            terminalreporter.write_line(
                f"... {plural(unlisted, 'more failed trial')} not listed: pytest -rf lists "
                "every one, pytest --lf runs them again"
            )
        self.write_block(terminalreporter)
        return result

    @pytest.hookimpl(specname="pytest_terminal_summary", tryfirst=True)
    def pytest_terminal_summary_restore(self, terminalreporter: Any) -> None:
        """First of the plain summary hooks: the failed trials back for the short summary, as
        many as it lists."""
        if self.hidden_failures:
            failed = terminalreporter.stats.setdefault("failed", [])
            self.failures = self.hidden_failures
            listed = self.failures[: self.listed_failures()]
            terminalreporter.stats["failed"] = listed + failed
            self.hidden_failures = []

    def unlist_failures(self, terminalreporter: Any) -> int:
        """After the short summary: every failed trial back for pytest's counts; how many it
        did not list."""
        if not self.failures:
            return 0
        failed = terminalreporter.stats["failed"]
        listed = set(map(id, self.failures)) & set(map(id, failed))
        terminalreporter.stats["failed"] = self.failures + [
            r for r in failed if id(r) not in listed
        ]
        unlisted = len(self.failures) - len(listed)
        self.failures = []
        return unlisted

    def write_block(self, terminalreporter: Any) -> None:
        """The agentbench block, within the last screen unless -v or --tb asked for all."""
        if self.report is None:
            return
        summary = self.report["summary"]
        if summary["tasks_selected"] == 0 and not self.report["observations"]:
            declared = plural(summary["tasks_declared"], "declared task")
            terminalreporter.write_line(f"agentbench: no trial selected of {declared}; nothing ran")
            return
        from pytest_agentbench.report.terminal import SCREEN_LINES, render

        where = ["pytest -v"]
        run_dir = self.report["run"].get("run_dir")
        if run_dir:
            where.append(
                f"agentbench report {_shown_path(self.config, run_dir)} --format html|md|json"
            )
        extra = []
        if self.settings.json_path is not None:
            where.append(f"the JSON report {self.settings.json_path}")
            extra.append(f"JSON report: {self.settings.json_path}")
        if run_dir:
            extra += self.down_engines(Path(run_dir))
            extra.append(f"view the run: agentbench view {_shown_path(self.config, run_dir)}")
        extra += self.resume_lines()
        # pytest's closing lines follow: the counts, and the reason if the run stopped early.
        budget = None if self.details_asked() else SCREEN_LINES - len(extra) - 4
        terminalreporter.write_sep("=", "agentbench")
        for line in render(self.report, budget, where=", ".join(where)) + extra:
            terminalreporter.write_line(line)

    def down_engines(self, run_dir: Path) -> list[str]:
        """The engines of the pool that went down during the run, one line each."""
        from pytest_agentbench.sandbox.placement import pool_engines, read_placement

        return [
            f"engine {e['name']} DOWN: {e['down']} ({plural(e['failures'], 'engine failure')}; "
            "its trials were run again elsewhere, up to --agentbench-retry-infra)"
            for e in pool_engines(read_placement(run_dir)) or ()
            if e.get("down")
        ]

    def resume_lines(self) -> list[str]:
        """How to continue a run that ended early (a signal, the breaker, a budget, a provider
        stop): the block's last line, to paste as it is."""
        run_dir = self.report["run"].get("run_dir") if self.report else None
        stops = self.config.pluginmanager.get_plugin(STOP_NAME)
        stopped = stops is not None and stops.current() is not None
        interrupted = self.session is not None and (
            self.session.exitstatus == pytest.ExitCode.INTERRUPTED
        )
        if not run_dir or not (stopped or interrupted):
            return []
        shown = _shown_path(self.config, run_dir)
        return [f"continue with: {resume_command(self.config, shown)}"]


def _shown_path(config: pytest.Config, path: str) -> str:
    """`path` relative to where pytest was started, when it lies beneath it."""
    return (
        os.path.relpath(path, config.invocation_params.dir)
        if path.startswith(str(config.invocation_params.dir) + os.sep)
        else path
    )


def _is_trial_outcome(report: Any) -> bool:
    """A trial's call report that failed as an outcome (not exact, provider stop,
    infrastructure failure), not as a harness error whose traceback someone has to read."""
    observation = getattr(report, REPORT_ATTRIBUTE, None) or {}
    status = observation.get("status")
    return getattr(report, "when", None) == "call" and status in (
        SCORED,
        PROVIDER_STOP,
        INFRASTRUCTURE,
    )
