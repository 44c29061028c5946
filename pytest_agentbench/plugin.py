"""pytest entry point: options, wiring and collection hooks. The work lives in other modules.

Nothing heavy is imported unless --agent is given, so plain test runs pay nothing.
"""

from __future__ import annotations

import atexit
import gc
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.options import (
    add_options,
    arms_path,
    plan_asked,
    resume_args,
    settings_from_config,
)

ACTIVE_KEY = pytest.StashKey[bool]()
REPORTER_NAME = "agentbench-reporter"
RELAY_NAME = "agentbench-relay"
PLAN_NAME = "agentbench-plan-json"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_agentbench import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """--agentbench-check checks the study and ends; --agentbench-detach: the run goes on in
    the background and this command ends."""
    if is_xdist_worker(config):
        return None
    if config.getoption("check"):
        from pytest_agentbench.commands.check import check

        return check(config)
    if not config.getoption("detach"):
        return None
    from pytest_agentbench.run.detach import detached_run_id
    from pytest_agentbench.run.plugins import detach_run

    return None if detached_run_id() else detach_run(config)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    settings = settings_from_config(config)
    config.stash[ACTIVE_KEY] = settings is not None
    if settings is None:
        return
    from pytest_agentbench.agents import BuiltinAgents
    from pytest_agentbench.grading.hook import DefaultGrader
    from pytest_agentbench.plan.collect import SELECTION_KEY, SETTINGS_KEY, TRIAL_RUNNER_KEY
    from pytest_agentbench.plan.selection import select_trials
    from pytest_agentbench.report.reporter import AgentbenchReporter, WorkerRelay
    from pytest_agentbench.run.plugins import register_run_plugins
    from pytest_agentbench.run.stop import RESUME_ARGS_KEY
    from pytest_agentbench.sandbox import provider_for
    from pytest_agentbench.suites import BuiltinSuites
    from pytest_agentbench.tasks.sources import resolve_sources
    from pytest_agentbench.trial import fixtures
    from pytest_agentbench.trial.process import process_agent

    config.stash[SETTINGS_KEY] = settings
    config.stash[RESUME_ARGS_KEY] = resume_args(config)
    plan = plan_asked(config)
    if plan:
        config.option.collectonly = True  # before xdist looks: nothing runs, on no worker
    config.stash[TRIAL_RUNNER_KEY] = fixtures.run_trial
    # Registered before pytest's own cleanups, so it runs after their closing collections.
    config.add_cleanup(gc.unfreeze)
    atexit.unregister(_freeze_at_exit)  # once per process, however many runs it holds
    atexit.register(_freeze_at_exit)
    config.pluginmanager.register(BuiltinAgents(), "agentbench-builtin-agents")
    config.pluginmanager.register(DefaultGrader(), "agentbench-default-grader")
    config.pluginmanager.register(BuiltinSuites(), "agentbench-builtin-suites")
    config.pluginmanager.register(fixtures, "agentbench-fixtures")
    _validate_agent_name(config, settings.agent)
    provider_for(config, settings)  # an unusable sandbox is a usage error before any trial
    _require_graders(config)
    arms_file, arms = arms_path(config), None
    if arms_file is not None:
        from pytest_agentbench.plan.arm_trials import configure_arms

        arms = configure_arms(config, arms_file)  # a bad file: a usage error before any trial
    base = Path(config.invocation_params.dir)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args = [str(path) for path in resolve_sources(settings.tasks, base)]
    elif not config.option.pyargs:  # node ids given back select their trials
        config.args, config.stash[SELECTION_KEY] = select_trials(config, settings)
    worker = is_xdist_worker(config)
    if worker:
        config.pluginmanager.register(WorkerRelay(config, settings), RELAY_NAME)
    else:
        config.pluginmanager.register(AgentbenchReporter(config, settings), REPORTER_NAME)
    register_run_plugins(config, settings, worker=worker)
    agent = process_agent(config, settings)  # one that cannot start: a usage error now
    if not worker and agent.meterable and settings.meter != "off":
        from pytest_agentbench.report.metering import MeterReadout

        config.pluginmanager.register(MeterReadout(), "agentbench-meter-readout")
    if arms is not None:
        from pytest_agentbench.agents.base import check_delivery

        check_delivery(agent, arms)  # a component the agent cannot receive: refused now
    if plan:
        from pytest_agentbench.report.plan import PlanJson

        config.pluginmanager.register(PlanJson(config), PLAN_NAME)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Before collection, with pytest's --lf plugin in place: every failed trial is found."""
    config = session.config
    if config.stash.get(ACTIVE_KEY, False) and config.getoption("lf", False):
        from pytest_agentbench.plan.collect import SETTINGS_KEY
        from pytest_agentbench.plan.selection import widen_last_failed

        widen_last_failed(config, config.stash[SETTINGS_KEY])


def _require_graders(config: pytest.Config) -> None:
    """SWE-bench sources need the swebench package: its absence is a usage error now."""
    from pytest_agentbench.plan.collect import instance_files

    files = instance_files(config)
    if files:
        from pytest_agentbench.tasks.swebench import require_swebench

        try:
            for path in sorted(files):
                require_swebench(path)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None


def _validate_agent_name(config: pytest.Config, name: str) -> None:
    from pytest_agentbench.trial.process import unknown_agent

    if name not in {n for names in config.hook.pytest_agentbench_agent_names() for n in names}:
        raise unknown_agent(config, name)


def pytest_unconfigure(config: pytest.Config) -> None:
    if "pytest_agentbench.meter.client" in sys.modules:
        sys.modules["pytest_agentbench.meter.client"].stop_shared_meter()
    if config.stash.get(ACTIVE_KEY, False):
        from pytest_agentbench.fs.filework import wait_for_file_work

        wait_for_file_work()  # every artifact written, no trial directory left, at the end
    from pytest_agentbench.run.plugins import RUN_PLUGIN_NAMES

    for name in (REPORTER_NAME, RELAY_NAME, PLAN_NAME, *RUN_PLUGIN_NAMES):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    if not config.stash.get(ACTIVE_KEY, False):
        return None
    from pytest_agentbench.header import header_lines

    return header_lines(config)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Without --agent, task directories are data: never collect test files inside them."""
    if config.stash.get(ACTIVE_KEY, False):
        from pytest_agentbench.plan.collect import SELECTION_KEY

        selection = config.stash.get(SELECTION_KEY, None)
        return True if selection is not None and selection.prunes(collection_path) else None
    from pytest_agentbench.tasks.directory import is_task_dir

    return True if collection_path.is_dir() and is_task_dir(collection_path) else None


def pytest_collect_directory(path: Path, parent: pytest.Collector) -> Any:
    if not parent.config.stash.get(ACTIVE_KEY, False):
        return None
    from pytest_agentbench.plan.collect import SuiteDirectory, TaskDirectory
    from pytest_agentbench.tasks.directory import is_task_dir
    from pytest_agentbench.tasks.sources import is_suite_dir

    if is_task_dir(path):
        return TaskDirectory.from_parent(parent, path=path)
    if is_suite_dir(path):
        return SuiteDirectory.from_parent(parent, path=path)
    return None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> Any:
    """A swebench:FILE source is collected as its instances."""
    if not parent.config.stash.get(ACTIVE_KEY, False) or file_path.suffix == ".py":
        return None
    from pytest_agentbench.plan.collect import InstancesFile, instance_files

    if file_path in instance_files(parent.config):
        return InstancesFile.from_parent(parent, path=file_path, nodeid=file_path.stem)
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what lives through collection (tasks, items, modules) until the run ends.

    Nothing of it becomes garbage before then, yet every full collection walked all of it:
    pytest's five at the end alone cost 50-100 ms, more than the trials of a fast agent.
    """
    if session.config.stash.get(ACTIVE_KEY, False):
        gc.freeze()


def _freeze_at_exit() -> None:
    """At interpreter exit: the garbage left is collected once (its finalizers run), then
    what is still alive is frozen, so the interpreter's own collections while it shuts down
    (several full ones, over pytest, the plugin and numpy: 0.1 to 0.3 s) skip it. Whatever is
    alive at exit is freed as the interpreter frees it, by reference counts."""
    gc.collect()
    gc.freeze()


def pytest_report_collectionfinish(
    config: pytest.Config, items: list[pytest.Item]
) -> list[str] | None:
    """The plan (under xdist the controller collects nothing: see the reporter)."""
    if not config.stash.get(ACTIVE_KEY, False):
        return None
    from pytest_agentbench.report.plan import plan_lines

    return plan_lines(config, [item.nodeid for item in items])
