"""Wires the run-level features for one process: run directory, resume, shard, kept
workspaces, and what stops a run (budgets, the circuit breaker, signals).

Every process selects its shard, marks reused trials, keeps workspaces, handles signals and
checks the run's stop gate before each trial it starts; only the controller reads the record,
checks the identity, writes the run directory and its progress, tallies the spend, counts
failures and decides the stop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentbench.settings import Settings

if TYPE_CHECKING:
    from pytest_agentbench.run.cache import BaselineCache

WRITER_NAME = "agentbench-run-writer"
RESUME_NAME = "agentbench-resume"
CACHE_NAME = "agentbench-cache"
SHARD_NAME = "agentbench-shard"
PROGRESS_NAME = "agentbench-progress"
BUDGET_NAME = "agentbench-budget"
BREAKER_NAME = "agentbench-breaker"
STOP_NAME = "agentbench-stop"
STOP_GATE_NAME = "agentbench-stop-gate"
INTERRUPTION_NAME = "agentbench-interruption"
AHEAD_NAME = "agentbench-ahead"
SCHEDULER_NAME = "agentbench-scheduler"
LOCK_NAME = "agentbench-run-lock"
RUN_PLUGIN_NAMES = (
    WRITER_NAME,
    LOCK_NAME,
    RESUME_NAME,
    SHARD_NAME,
    PROGRESS_NAME,
    BUDGET_NAME,
    BREAKER_NAME,
    STOP_NAME,
    STOP_GATE_NAME,
    INTERRUPTION_NAME,
    AHEAD_NAME,
    SCHEDULER_NAME,
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


def run_directory(config: pytest.Config, run_id: str) -> Path:
    """The directory this session writes: --agentbench-dir, else the resumed one, else a new
    one under the default root named by the run id."""
    from pytest_agentbench.run.store import DEFAULT_ROOT

    named = _option(config, "run_dir") or _option(config, "resume_dir")
    return _resolve(config, named) if named else config.rootpath / DEFAULT_ROOT / run_id


def detach_run(config: pytest.Config) -> int | None:
    """--agentbench-detach (run/detach.py): this command's exit status once the detached run
    holds its directory, or None to run here (a plan or listing has nothing to leave running)."""
    from pytest_agentbench.run.detach import detach
    from pytest_agentbench.run.store import new_run_id

    if config.option.collectonly or config.getoption("plan"):
        return None
    if config.getoption("agent") is None and _option(config, "resume_dir") is None:
        raise pytest.UsageError(
            "--agentbench-detach runs a benchmark in the background: give --agent "
            "(or --agentbench-resume RUN_DIR)"
        )
    run_id = new_run_id()
    return detach(config, run_directory(config, run_id), run_id)


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
    else:
        _register_controller(config, settings, shard_raw)
    if settings.concurrency > 1 and not config.option.collectonly:
        _register_ahead(config, settings, worker=worker)


def _worker_budget(config: pytest.Config, settings: Settings) -> Any:
    """A worker's own count of the budget (budget.WorkerBudget), when the run has one."""
    from pytest_agentbench.run.budget import WORKER_INPUT, WorkerBudget

    path = config.workerinput.get(WORKER_INPUT)  # type: ignore[attr-defined]
    stops = config.pluginmanager.get_plugin(STOP_NAME)
    if path is None or stops is None:
        return None
    worker = config.workerinput["workerid"]  # type: ignore[attr-defined]
    return WorkerBudget(settings, Path(path), worker, stops)


def _register_ahead(config: pytest.Config, settings: Settings, *, worker: bool) -> None:
    """Trials in flight at once (run/ahead.py): where trials run -- this process without
    xdist, each worker with it -- and, on xdist's controller, the scheduler that keeps each
    worker sent enough of them."""
    if not worker and getattr(config.option, "numprocesses", None):
        from pytest_agentbench.run.schedule import AheadScheduler

        config.pluginmanager.register(AheadScheduler(settings.concurrency), SCHEDULER_NAME)
        return
    from pytest_agentbench.run.ahead import CAPACITY_KEY, TrialsAhead
    from pytest_agentbench.sandbox import provider_for
    from pytest_agentbench.sandbox.capacity import trial_capacity

    processes = int(config.workerinput["workercount"]) if worker else 1  # type: ignore[attr-defined]
    limit, bound = trial_capacity(
        provider_for(config, settings), settings.sandbox_limits, settings.concurrency, processes
    )
    config.stash[CAPACITY_KEY] = (limit, bound)
    gate = config.pluginmanager.get_plugin(STOP_GATE_NAME)
    budget = config.pluginmanager.get_plugin(BUDGET_NAME)
    progress = config.pluginmanager.get_plugin(PROGRESS_NAME)
    if worker and budget is None:
        budget = _worker_budget(config, settings)

    def stopped() -> str | None:
        if worker and budget is not None:
            budget.check()  # the other workers' spend, as the controller last heard of it
        stop = gate.current() if gate is not None else None
        return stop.reason if stop is not None else None

    def finished(item: Any, done: Any) -> None:
        if budget is not None:
            budget.count_ahead(item.nodeid, done.observation)

    def began(item: Any) -> None:
        if progress is not None:
            progress.started_ahead(item.nodeid)

    ahead = TrialsAhead(config, limit, stopped, began, finished)
    config.pluginmanager.register(ahead, AHEAD_NAME)


def _register_run_control(
    config: pytest.Config, settings: Settings, workerinput: dict[str, Any]
) -> None:
    """On a worker: keep workspaces where the controller writes the run, and stop starting
    trials when the controller's stop file, or a signal to this worker, says so."""
    from pytest_agentbench.run import stop
    from pytest_agentbench.run.store import RUN_DIR_INPUT
    from pytest_agentbench.sandbox import provider_for

    run_dir = workerinput.get(RUN_DIR_INPUT)
    if run_dir is not None:
        provider_for(config, settings).run_directory(Path(run_dir))
    if run_dir is not None and settings.keep != "none":
        _keep_in(config, settings, Path(run_dir))
    stop_file = workerinput.get(stop.WORKER_INPUT)
    if stop_file is not None:
        stops = stop.StopFile(Path(stop_file))
        config.pluginmanager.register(stops, STOP_NAME)
        config.pluginmanager.register(stop.StopGate(stops.current), STOP_GATE_NAME)
        config.pluginmanager.register(stop.Interruption(stops), INTERRUPTION_NAME)


def _keep_in(config: pytest.Config, settings: Settings, run_dir: Path) -> None:
    from pytest_agentbench.trial.keep import WorkspaceKeeper
    from pytest_agentbench.trial.perform import KEEP_KEY

    config.stash[KEEP_KEY] = WorkspaceKeeper(settings.keep, run_dir).keep


def _register_controller(config: pytest.Config, settings: Settings, shard: str | None) -> None:
    from pytest_agentbench.plan.arm_trials import (
        ARMS_FILE_KEY,
        arm_identities,
        refuse_other_arms,
        run_arms,
    )
    from pytest_agentbench.run.detach import detached_run_id
    from pytest_agentbench.run.lock import RunLock
    from pytest_agentbench.run.resume import Resume, refuse_other_identity
    from pytest_agentbench.run.store import (
        RunRecord,
        RunWriter,
        configuration_identity,
        new_run_id,
        read_run_directory,
    )
    from pytest_agentbench.sandbox import provider_for
    from pytest_agentbench.trial.process import agent_info

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
    if baselines := _baselines(config):
        _reuse_baselines(config, baselines, identity)
    cache = _cache(config)
    if cache is not None:
        _reuse_cached(config, cache, identity)
    run_id = detached_run_id() or new_run_id()
    directory = run_directory(config, run_id)  # a new one: run.json's run_id names it
    if config.option.collectonly:
        return
    lock = RunLock(directory, detached=detached_run_id() is not None)
    lock.refuse_if_held()
    config.pluginmanager.register(lock, LOCK_NAME)
    provider_for(config, settings).run_directory(directory)
    writer = RunWriter(settings, directory, identity, info, sandbox, shard, record, run_id)
    arms = run_arms(config)
    if arms is not None:
        writer.run["arms"] = arm_identities(arms, identity)
        writer.run["arms_file"] = str(config.stash[ARMS_FILE_KEY])
        writer.run["arm_anchors"] = {a.name: f for a in arms if (f := a.task_prefix_field)}
    config.pluginmanager.register(writer, WRITER_NAME)
    if cache is not None:
        from pytest_agentbench.run.cache import CachePublisher

        vanilla = _vanilla_identity(config, identity)
        config.pluginmanager.register(CachePublisher(cache, vanilla, directory), CACHE_NAME)
    from pytest_agentbench.run.breaker import Breaker
    from pytest_agentbench.run.progress import ProgressLog
    from pytest_agentbench.run.stop import Interruption, RunStop, StopGate

    progress = ProgressLog(directory)
    stops = RunStop(directory, writer.run, progress.stopping)
    config.pluginmanager.register(stops, STOP_NAME)
    config.pluginmanager.register(StopGate(stops.current), STOP_GATE_NAME)
    config.pluginmanager.register(Interruption(stops, _terminal_line(config)), INTERRUPTION_NAME)
    config.pluginmanager.register(Breaker(settings, stops), BREAKER_NAME)
    config.pluginmanager.register(progress, PROGRESS_NAME)
    if settings.keep != "none":
        _keep_in(config, settings, directory)
    if settings.budget_usd is not None or settings.budget_tokens is not None:
        from pytest_agentbench.run.budget import BudgetLedger

        config.pluginmanager.register(BudgetLedger(settings, stops), BUDGET_NAME)


def _baselines(config: pytest.Config) -> list[Path]:
    """--agentbench-baseline directories, else the ini's (relative to the ini file)."""
    given = config.getoption("baseline")
    if given:
        return [_resolve(config, raw) for raw in given]
    return [Path(path) for path in config.getini("agentbench_baseline")]


def _reuse_baselines(
    config: pytest.Config, baselines: list[Path], identity: dict[str, Any]
) -> None:
    """Every baseline's matching trials, in the resume plugin (made for them without one)."""
    from pytest_agentbench.plan.arm_trials import arm_identities, run_arms
    from pytest_agentbench.run.resume import Resume
    from pytest_agentbench.run.store import read_run_directory

    arms = run_arms(config)
    identities: dict[str | None, dict[str, Any]] = {None: identity}
    if arms is not None:
        identities = {name: arm for name, arm in arm_identities(arms, identity).items()}
    reuse = config.pluginmanager.get_plugin(RESUME_NAME)
    if reuse is None:
        reuse = Resume({}, {}, {})
        config.pluginmanager.register(reuse, RESUME_NAME)
    for path in baselines:
        try:
            record = read_run_directory(path)
        except ValueError as exc:
            raise pytest.UsageError(f"--agentbench-baseline {path}: {exc}") from None
        reuse.add_baseline(record, identities)


def _cache(config: pytest.Config) -> BaselineCache | None:
    """--agentbench-cache, else the ini's (relative to the ini file)."""
    from pytest_agentbench.run.cache import BaselineCache

    given = config.getoption("cache_dir")
    if given:
        return BaselineCache(_resolve(config, given))
    ini = config.getini("agentbench_cache")
    if len(ini) > 1:
        raise pytest.UsageError(
            f"ini agentbench_cache names {len(ini)} paths; name one cache directory"
        )
    return BaselineCache(Path(ini[0])) if ini else None


def _reuse_cached(config: pytest.Config, cache: BaselineCache, identity: dict[str, Any]) -> None:
    """The cache's trials of this run's vanilla configuration (the identity of a plain run and
    of the vanilla arm are one), in the resume plugin (made for them without one)."""
    from pytest_agentbench.plan.arm_trials import run_arms
    from pytest_agentbench.run.resume import Resume
    from pytest_agentbench.tasks.arms import VANILLA

    reuse = config.pluginmanager.get_plugin(RESUME_NAME)
    if reuse is None:
        reuse = Resume({}, {}, {})
        config.pluginmanager.register(reuse, RESUME_NAME)
    arm = VANILLA if run_arms(config) is not None else None
    reuse.add_cached(str(cache.root), cache.read(_vanilla_identity(config, identity)), arm)


def _vanilla_identity(config: pytest.Config, identity: dict[str, Any]) -> dict[str, Any]:
    """The identity of the run's vanilla configuration: its vanilla arm's, or its own."""
    from pytest_agentbench.plan.arm_trials import arm_identities, run_arms
    from pytest_agentbench.tasks.arms import VANILLA

    arms = run_arms(config)
    return identity if arms is None else arm_identities(arms, identity)[VANILLA]


def _terminal_line(config: pytest.Config) -> Callable[[str], None]:
    """Write a line on the terminal, on a line of its own (progress letters may precede it),
    even while a trial's output is being captured."""

    def say(line: str) -> None:
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        capture = config.pluginmanager.get_plugin("capturemanager")
        if terminal is None:
            return
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            terminal.ensure_newline()
            terminal.write_line(line, yellow=True)

    return say
