"""Wires the run-level features for one process: run directory, resume, shard, kept
workspaces, budgets and the circuit breaker.

Every process selects its shard, marks reused trials, keeps workspaces and checks the budget
and the breaker before each trial it starts; only the controller reads the record, checks the
identity, writes the run directory and its progress, tallies the spend and counts failures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.settings import Settings

WRITER_NAME = "agentbench-run-writer"
RESUME_NAME = "agentbench-resume"
SHARD_NAME = "agentbench-shard"
PROGRESS_NAME = "agentbench-progress"
BUDGET_NAME = "agentbench-budget"
BUDGET_GATE_NAME = "agentbench-budget-gate"
BREAKER_NAME = "agentbench-breaker"
BREAKER_GATE_NAME = "agentbench-breaker-gate"
RUN_PLUGIN_NAMES = (
    WRITER_NAME,
    RESUME_NAME,
    SHARD_NAME,
    PROGRESS_NAME,
    BUDGET_NAME,
    BUDGET_GATE_NAME,
    BREAKER_NAME,
    BREAKER_GATE_NAME,
)


def _option(config: pytest.Config, dest: str) -> str | None:
    value = config.getoption(dest)
    if value is None and dest == "run_dir":
        value = config.getini("agentbench_run_dir") or None
    return str(value) if value else None


def _resolve(config: pytest.Config, raw: str) -> Path:
    path = Path(raw)
    return path if path.is_absolute() else Path(config.invocation_params.dir) / path


def run_roots(config: pytest.Config) -> list[Path]:
    """Where this run's directory and earlier ones live: the default root, and the run and
    resume directories the options name."""
    from pytest_agentbench.run.store import DEFAULT_ROOT

    named = [_option(config, "run_dir"), _option(config, "resume_dir")]
    return [config.rootpath / DEFAULT_ROOT, *(_resolve(config, raw) for raw in named if raw)]


def register_run_plugins(config: pytest.Config, settings: Settings, *, worker: bool) -> None:
    from pytest_agentbench.plan.shard import ShardSelection, parse_shard
    from pytest_agentbench.run.resume import WORKER_INPUT, Resume

    shard_raw = _option(config, "shard")
    if shard_raw:
        config.pluginmanager.register(ShardSelection(*parse_shard(shard_raw)), SHARD_NAME)
    if worker:
        workerinput = config.workerinput  # type: ignore[attr-defined]
        data = workerinput.get(WORKER_INPUT)
        if data is not None:
            config.pluginmanager.register(Resume.from_workerinput(data), RESUME_NAME)
        _register_run_control(config, settings, workerinput)
        return
    _register_controller(config, settings, shard_raw)


def _register_run_control(
    config: pytest.Config, settings: Settings, workerinput: dict[str, Any]
) -> None:
    """On a worker: keep workspaces where the controller writes the run, and check the budget
    against the spend file the controller appends."""
    from pytest_agentbench.run.budget import WORKER_INPUT, BudgetGate, SpendFileReader
    from pytest_agentbench.run.store import RUN_DIR_INPUT

    run_dir = workerinput.get(RUN_DIR_INPUT)
    if run_dir is not None and settings.keep != "none":
        _keep_in(config, settings, Path(run_dir))
    spend_file = workerinput.get(WORKER_INPUT)
    if spend_file is not None:
        gate = BudgetGate(settings, SpendFileReader(Path(spend_file)))
        config.pluginmanager.register(gate, BUDGET_GATE_NAME)
    from pytest_agentbench.run import breaker

    trip_file = workerinput.get(breaker.WORKER_INPUT)
    if trip_file is not None:
        opened = breaker.trip_file_reader(Path(trip_file))
        config.pluginmanager.register(breaker.BreakerGate(opened), BREAKER_GATE_NAME)


def _keep_in(config: pytest.Config, settings: Settings, run_dir: Path) -> None:
    from pytest_agentbench.trial.fixtures import KEEP_KEY
    from pytest_agentbench.trial.keep import WorkspaceKeeper

    config.stash[KEEP_KEY] = WorkspaceKeeper(settings.keep, run_dir).keep


def _register_controller(config: pytest.Config, settings: Settings, shard: str | None) -> None:
    from pytest_agentbench.plan.arm_trials import arm_identities, refuse_other_arms, run_arms
    from pytest_agentbench.run.resume import Resume, refuse_other_identity
    from pytest_agentbench.run.store import (
        DEFAULT_ROOT,
        RunRecord,
        RunWriter,
        configuration_identity,
        new_run_id,
        read_run_directory,
    )
    from pytest_agentbench.sandbox import provider_for
    from pytest_agentbench.trial.fixtures import agent_info

    info = agent_info(config, settings)
    sandbox = provider_for(config, settings).describe()  # the run's provider, not a second one
    identity = configuration_identity(settings, info, sandbox)
    resume_raw = _option(config, "resume_dir")
    record: RunRecord | None = None
    if resume_raw:
        try:
            record = read_run_directory(_resolve(config, resume_raw))
        except ValueError as exc:
            raise pytest.UsageError(f"--agentbench-resume {resume_raw}: {exc}") from None
        refuse_other_identity(record, identity)
        refuse_other_arms(record.run, run_arms(config), identity, resume_raw)
        config.pluginmanager.register(Resume.from_record(record), RESUME_NAME)
    run_id = new_run_id()
    run_raw = _option(config, "run_dir")
    if run_raw:
        directory = _resolve(config, run_raw)
    elif record is not None:
        directory = record.path
    else:
        directory = config.rootpath / DEFAULT_ROOT / run_id  # run.json's run_id names it
    if config.option.collectonly:
        return
    writer = RunWriter(settings, directory, identity, info, sandbox, shard, record, run_id)
    arms = run_arms(config)
    if arms is not None:
        writer.run["arms"] = arm_identities(arms, identity)
        writer.run["arm_anchors"] = {a.name: f for a in arms if (f := a.task_prefix_field)}
    config.pluginmanager.register(writer, WRITER_NAME)
    from pytest_agentbench.run.breaker import Breaker, BreakerGate
    from pytest_agentbench.run.progress import ProgressLog

    breaker = Breaker(settings, directory, writer.run)
    config.pluginmanager.register(breaker, BREAKER_NAME)
    config.pluginmanager.register(BreakerGate(breaker.opened), BREAKER_GATE_NAME)

    config.pluginmanager.register(ProgressLog(directory), PROGRESS_NAME)
    if settings.keep != "none":
        _keep_in(config, settings, directory)
    if settings.budget_usd is not None or settings.budget_tokens is not None:
        from pytest_agentbench.run.budget import BudgetGate, BudgetLedger

        ledger = BudgetLedger(settings, directory)
        config.pluginmanager.register(ledger, BUDGET_NAME)
        config.pluginmanager.register(BudgetGate(settings, ledger.current), BUDGET_GATE_NAME)
