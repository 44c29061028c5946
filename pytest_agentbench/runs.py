"""Wires the run-level features for one process: run directory, resume and shard.

Every process selects its shard and marks reused trials; only the controller reads the
record, checks the identity and writes the run directory.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentbench.settings import Settings

WRITER_NAME = "agentbench-run-writer"
RESUME_NAME = "agentbench-resume"
SHARD_NAME = "agentbench-shard"


def _option(config: pytest.Config, dest: str) -> str | None:
    value = config.getoption(dest)
    if value is None and dest == "run_dir":
        value = config.getini("agentbench_run_dir") or None
    return str(value) if value else None


def _resolve(config: pytest.Config, raw: str) -> Path:
    path = Path(raw)
    return path if path.is_absolute() else Path(config.invocation_params.dir) / path


def register_run_plugins(config: pytest.Config, settings: Settings, *, worker: bool) -> None:
    from pytest_agentbench.resume import WORKER_INPUT, Resume
    from pytest_agentbench.shard import ShardSelection, parse_shard

    shard_raw = _option(config, "shard")
    if shard_raw:
        config.pluginmanager.register(ShardSelection(*parse_shard(shard_raw)), SHARD_NAME)
    if worker:
        data = config.workerinput.get(WORKER_INPUT)  # type: ignore[attr-defined]
        if data is not None:
            config.pluginmanager.register(Resume.from_workerinput(data), RESUME_NAME)
        return
    _register_controller(config, settings, shard_raw)


def _register_controller(config: pytest.Config, settings: Settings, shard: str | None) -> None:
    from pytest_agentbench.reporter import agent_info
    from pytest_agentbench.resume import Resume, refuse_other_identity
    from pytest_agentbench.sandbox import provider_for
    from pytest_agentbench.store import (
        DEFAULT_ROOT,
        RunRecord,
        RunWriter,
        configuration_identity,
        new_run_id,
        read_run_directory,
    )

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
        config.pluginmanager.register(Resume.from_record(record), RESUME_NAME)
    run_raw = _option(config, "run_dir")
    if run_raw:
        directory = _resolve(config, run_raw)
    elif record is not None:
        directory = record.path
    else:
        directory = config.rootpath / DEFAULT_ROOT / new_run_id()
    if config.option.collectonly:
        return
    writer = RunWriter(settings, directory, identity, info, sandbox, shard, record)
    config.pluginmanager.register(writer, WRITER_NAME)
