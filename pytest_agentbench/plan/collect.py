"""Collectors: task sources become one collector per task and one item per repeat.

Items are ``pytest.Function`` objects with a fixed call object so fixtures work, named
``r0``, ``r1`` ... (no brackets, so ``--lf`` works), in sorted order so xdist workers agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.plan.arm_trials import arm_prompt, item_name, run_arms, trial_order
from pytest_agentbench.tasks.arms import Arm
from pytest_agentbench.tasks.formats import forced_format, forced_formats, load_task_dir
from pytest_agentbench.tasks.model import Task, TaskError
from pytest_agentbench.tasks.observation import OBSERVATION_KEY, Observation
from pytest_agentbench.tasks.sources import suite_name

SETTINGS_KEY = pytest.StashKey[Any]()
TRIAL_RUNNER_KEY = pytest.StashKey[Callable[["TaskItem", Any], None]]()
"""What a trial item's call runs, given the item and its sandbox (fixtures.run_trial, set by
the plugin): items are made here, trials are run there, and this module need not know how."""
SELECTION_KEY = pytest.StashKey[Any]()  # a selection.TrialSelection, when arguments name trials
SUITE_TASKS_KEY = pytest.StashKey[dict[Path, list[Task]]]()


class TrialFailed(Exception):
    """The trial did not end exact; the message is the grader's story."""


class ProviderStopped(Exception):
    """The provider stopped the trial (rate limit, auth, outage): not an outcome."""


class InfrastructureFailed(Exception):
    """The machine ended the trial (upstream unreachable, sandbox or engine failure): not an
    outcome."""


REGISTERED_TAGS_KEY = pytest.StashKey[set[str]]()


def _register_tags(config: pytest.Config, tags: tuple[str, ...]) -> None:
    """Declare each task tag as a marker once, so -m works under --strict-markers."""
    registered = config.stash.setdefault(REGISTERED_TAGS_KEY, set())
    for tag in tags:
        if tag not in registered:
            registered.add(tag)
            config.addinivalue_line("markers", f"{tag}: agentbench task tag")


class TaskItem(pytest.Function):
    """One trial: a task x repeat. Its call object runs the trial through the fixtures."""

    def __init__(
        self,
        *,
        task: Task | None,
        task_id: str,
        repeat: int,
        error: str | None,
        arm: Arm | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(callobj=self.run_trial, **kwargs)
        self.task = task
        self.task_id = task_id
        self.repeat = repeat
        self.arm = arm  # the arm the trial runs in, with --arms
        self.task_error = error
        self.reused: Observation | None = None  # the recorded Observation, when resumed

    def run_trial(self, agentbench_sandbox: Any) -> None:
        """The call object: a bound method, so pytest need not make a ``request`` fixture per
        item to find the item; the sandbox fixture is the only one a trial asks for."""
        self.config.stash[TRIAL_RUNNER_KEY](self, agentbench_sandbox)

    @property
    def ihook(self) -> Any:
        """Its collector's hooks (for a directory task: those of the directory holding it)."""
        return self.parent.ihook if self.parent is not None else super().ihook

    def setup(self) -> None:
        if self.reused is None:  # a reused trial needs no sandbox, no agent
            super().setup()

    def runtest(self) -> None:
        if self.reused is None:
            super().runtest()
            return
        self.stash[OBSERVATION_KEY] = self.reused  # the recorded outcome; nothing runs
        if not self.reused["final_exact"]:
            raise TrialFailed(f"recorded result (reused from {self.reused['reused']}): not exact")

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Line 0 of the task: pytest needs a line to report a skipped trial."""
        return self.path, 0, f"{self.task_id} {self.name}"

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        not_outcomes = TrialFailed | ProviderStopped | InfrastructureFailed | TaskError
        if isinstance(excinfo.value, not_outcomes):
            from pytest_agentbench.plan.failure import trial_failure

            return trial_failure(self.path, str(excinfo.value))
        return super().repr_failure(excinfo)


FIXTURE_INFO_KEY = pytest.StashKey[dict[str, Any]]()


def _shared_fixtureinfo(parent: pytest.Collector) -> dict[str, Any]:
    """Where pytest may reuse one item's fixture closure for the next: every repeat of every
    task of one directory (no conftest.py is read inside a task, so nothing can make the
    fixtures of sibling tasks differ). Looked up once per directory, not per item."""
    if parent.parent is None:
        return {}
    return parent.config.stash.setdefault(FIXTURE_INFO_KEY, {}).setdefault(parent.parent.nodeid, {})


def make_items(
    parent: pytest.Collector,
    task: Task | None,
    task_id: str,
    error: str | None,
    *,
    generated: bool = False,
) -> Iterator[TaskItem]:
    """One item per repeat (per arm and repeat with --arms), or per trial named on the
    command line (see selection.py)."""
    settings = parent.config.stash[SETTINGS_KEY]
    selection = parent.config.stash.get(SELECTION_KEY, None)
    key = task_id if generated else None  # a directory task is known by its path alone
    names = selection.repeat_names(parent.path, key) if selection is not None else None
    tags = task.tags if task is not None else ()
    _register_tags(parent.config, tags)
    shared = _shared_fixtureinfo(parent)
    for arm, repeat in _trials(parent.config, task_id, names, settings):
        item = TaskItem.from_parent(
            parent,
            name=item_name(arm, repeat),
            task=task,
            task_id=task_id,
            repeat=repeat,
            error=error,
            arm=arm,
            **shared,
        )
        shared["fixtureinfo"] = item._fixtureinfo
        for tag in tags:
            item.add_marker(tag)
        if arm is not None and task is not None and arm_prompt(arm, task) is None:
            item.add_marker(
                pytest.mark.skip(reason=f"arm {arm.name}: task has no {arm.task_prefix_field}")
            )
        yield item


def _trials(
    config: pytest.Config, task_id: str, names: set[str] | None, settings: Any
) -> list[tuple[Arm | None, int]]:
    """A task's trials as (arm, repeat): the repeats --repeats makes, or those named (r<k>,
    every arm's; <arm>::r<k>, one arm's); with arms, interleaved (arm_trials.trial_order)."""
    arms = run_arms(config)
    if names is None:
        wanted = None
        repeats = list(range(settings.repeats))
    else:
        wanted = {name.rpartition("::")[::2] for name in names}  # (arm or "", "r<k>")
        repeats = sorted({int(name.rpartition("::")[2][1:]) for name in names})
    if arms is None:
        return [(None, repeat) for repeat in repeats]
    return [
        (arm, repeat)
        for arm, repeat in trial_order(task_id, arms, repeats, settings.seed)
        if wanted is None or {("", f"r{repeat}"), (arm.name, f"r{repeat}")} & wanted
    ]


class TaskDirectory(pytest.File):
    """A directory task (task.toml). A malformed one still yields items that error at setup.

    A File, not a Directory, for pytest: a task directory is data, so pytest neither looks in
    it for conftest.py files nor walks it, and ``--lf`` skips the tasks that did not fail.
    """

    @cached_property
    def ihook(self) -> Any:
        """The hooks of the directory holding the task: pytest loads conftest.py files per
        directory collected, and a task directory is never collected as one. Looked up once:
        that directory was collected, with its conftests, before this node was made."""
        return self.session.gethookproxy(self.path.parent)

    def collect(self) -> Iterator[TaskItem]:
        try:
            task: Task | None = load_task_dir(self.path, _forced_format(self.config, self.path))
            error = None
        except TaskError as exc:
            task, error = None, str(exc)
        yield from make_items(self, task, self.path.name, error)


FORMATS_KEY = pytest.StashKey[dict[Path, str]]()


def _forced_format(config: pytest.Config, task_dir: Path) -> str | None:
    """The format a FORMAT:PATH source forces on the task directory, worked out once a run."""
    formats = config.stash.get(FORMATS_KEY, None)
    if formats is None:
        from pytest_agentbench.tasks.sources import resolve_formatted_sources

        specs = config.stash[SETTINGS_KEY].tasks
        base = Path(config.invocation_params.dir)
        formats = forced_formats(resolve_formatted_sources(specs, base)) if specs else {}
        config.stash[FORMATS_KEY] = formats
    return forced_format(formats, task_dir)


class GeneratedTask(pytest.Collector):
    """One task of a generated suite; its node id reads like a path: <suite>/<task-id>, or
    <task-id> alone when the suite is a task source outside the rootdir (its node id is empty).
    A SWE-bench instance that does not load is one too, without its task: its items error."""

    def __init__(
        self, *, task: Task | None, task_id: str = "", error: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.task = task
        self.task_id = task.id if task is not None else task_id
        self.error = error

    def collect(self) -> Iterator[TaskItem]:
        yield from make_items(self, self.task, self.task_id, self.error, generated=True)


class SuiteDirectory(pytest.Directory):
    """A generated suite, its tasks supplied by the pytest_agentbench_suite_tasks hook."""

    def collect(self) -> Iterator[pytest.Collector]:
        selection = self.config.stash.get(SELECTION_KEY, None)
        named = selection.suite_task_ids(self.path) if selection else None
        for task in suite_tasks(self.config, self.path):
            if named is not None and task.id not in named:
                continue
            nodeid = f"{self.nodeid}/{task.id}" if self.nodeid else task.id
            yield GeneratedTask.from_parent(
                self, name=task.id, nodeid=nodeid, path=self.path, task=task
            )


def suite_tasks(config: pytest.Config, directory: Path) -> list[Task]:
    """The tasks of a generated suite, asked of the hook once per process (node ids naming
    its tasks are checked against them before collection)."""
    cache = config.stash.setdefault(SUITE_TASKS_KEY, {})
    if directory not in cache:
        name = suite_name(directory)
        tasks = config.hook.pytest_agentbench_suite_tasks(name=name, config=config)
        if tasks is None:
            raise pytest.UsageError(f"{directory}: no plugin provides the suite {name!r}")
        cache[directory] = tasks
    return cache[directory]


INSTANCES_KEY = pytest.StashKey[dict[Path, list[Any]]]()


def instances(config: pytest.Config, path: Path) -> list[Any]:
    """The instances of a swebench:FILE source (tasks/swebench.Loaded), read once per process
    with the run's --swebench-images template."""
    cache = config.stash.setdefault(INSTANCES_KEY, {})
    if path not in cache:
        from pytest_agentbench.tasks.swebench import load_instances

        try:
            cache[path] = load_instances(path, config.stash[SETTINGS_KEY].swebench_images)
        except TaskError as exc:
            raise pytest.UsageError(str(exc)) from None
    return cache[path]


class InstancesFile(pytest.File):
    """A JSONL file of SWE-bench instances: one task per line, named <file stem>/<instance_id>
    whether or not the file lies below the rootdir, so ids copied from any run select alike."""

    def collect(self) -> Iterator[pytest.Collector]:
        selection = self.config.stash.get(SELECTION_KEY, None)
        named = selection.suite_task_ids(self.path) if selection else None
        for loaded in instances(self.config, self.path):
            if named is not None and loaded.task_id not in named:
                continue
            yield GeneratedTask.from_parent(
                self,
                name=loaded.task_id,
                nodeid=f"{self.path.stem}/{loaded.task_id}",
                path=self.path,
                task=loaded.task,
                task_id=loaded.task_id,
                error=loaded.error,
            )


INSTANCE_FILES_KEY = pytest.StashKey[frozenset[Path]]()


def instance_files(config: pytest.Config) -> frozenset[Path]:
    """The run's swebench:FILE sources, worked out once a run."""
    found = config.stash.get(INSTANCE_FILES_KEY, None)
    if found is None:
        from pytest_agentbench.tasks.formats import SWEBENCH
        from pytest_agentbench.tasks.sources import resolve_formatted_sources

        specs = config.stash[SETTINGS_KEY].tasks
        base = Path(config.invocation_params.dir)
        sources = resolve_formatted_sources(specs, base) if specs else []
        found = frozenset(path for forced, path in sources if forced == SWEBENCH)
        config.stash[INSTANCE_FILES_KEY] = found
    return found
