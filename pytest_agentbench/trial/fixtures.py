"""Fixtures that lay out a trial, the trial's call object, and the Observation on the report."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest

from pytest_agentbench.agents.base import Agent
from pytest_agentbench.fs import names
from pytest_agentbench.plan.arm_trials import arm_name
from pytest_agentbench.plan.collect import SETTINGS_KEY, TaskItem
from pytest_agentbench.sandbox.base import (
    InfrastructureError,
    Sandbox,
    SandboxProvider,
    start_sandbox,
)
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.model import Task, TaskError
from pytest_agentbench.tasks.observation import OBSERVATION_KEY, REPORT_ATTRIBUTE, error_observation
from pytest_agentbench.trial.artifacts import REPORT_ATTRIBUTE as ARTIFACTS_ATTRIBUTE
from pytest_agentbench.trial.perform import (
    TrialDone,
    check_sandbox_kind,
    item_task,
    perform,
    trial_label,
)
from pytest_agentbench.trial.process import process_parts

ARTIFACTS_KEY = pytest.StashKey[dict[str, str | bytes]]()
SANDBOX_FAILURE_KEY = pytest.StashKey[InfrastructureError]()  # the trial's sandbox did not start
STARTED_KEY = pytest.StashKey[float]()  # when the trial's set-up began (time.monotonic)
# The trial run ahead of its item's turn (run/ahead.py): waits for it and returns it.
AHEAD_KEY = pytest.StashKey[Callable[[], TrialDone]]()


@pytest.fixture(scope="session")
def agentbench_settings(pytestconfig: pytest.Config) -> Settings:
    """The run's validated settings."""
    return pytestconfig.stash[SETTINGS_KEY]


@pytest.fixture(scope="session")
def agentbench_agent(pytestconfig: pytest.Config) -> Agent:
    """The agent chosen by --agent, made once per process."""
    return process_parts(pytestconfig)[1]


@pytest.fixture(scope="session")
def agentbench_sandbox_provider(pytestconfig: pytest.Config) -> SandboxProvider:
    """Makes a fresh sandbox per trial, as chosen by --sandbox, with what the agent needs."""
    return process_parts(pytestconfig)[2]


@pytest.fixture
def agentbench_task(request: pytest.FixtureRequest) -> Task:
    """The task of this item; a malformed task errors here, naming the file and the fix."""
    return item_task(request.node)


@pytest.fixture
def agentbench_sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox | None]:
    """A fresh sandbox whose workspace holds only the task's input tree (None when it could
    not start: an infrastructure failure, which the trial records; None too for a trial run
    ahead of its turn, whose sandbox lived on the trial's own thread: docs/scaling.md).

    The one fixture a trial asks for: it finds the task, agent and provider itself, since
    every fixture a trial's closure holds costs pytest a lookup per item.
    """
    item = request.node
    task = item_task(item)
    if AHEAD_KEY in item.stash:
        yield None
        return
    check_sandbox_kind(item, task)
    provider = process_parts(item.config)[2]
    item.stash[STARTED_KEY] = time.monotonic()
    try:
        sandbox = start_sandbox(provider, task, trial_label(item))
    except InfrastructureError as error:  # the trial records it, and may start a fresh one
        item.stash[SANDBOX_FAILURE_KEY] = error
        yield None
        return
    with sandbox:
        yield sandbox


@pytest.fixture
def agentbench_workspace(agentbench_sandbox: Sandbox) -> Path:
    """Host path of the trial's workspace (a fresh copy of the input tree only)."""
    return agentbench_sandbox.workspace


def run_trial(item: TaskItem, sandbox: Sandbox | None) -> None:
    """What every TaskItem's call runs: the trial (or the one run ahead of this turn), then
    what pytest is told of it: the Observation and artifacts on the item, and the judgement."""
    wait = item.stash.get(AHEAD_KEY, None)
    if wait is not None:
        done = wait()
    else:
        failure = item.stash.get(SANDBOX_FAILURE_KEY, None)
        done = perform(item, sandbox, failure, item.stash.get(STARTED_KEY, None))
    item.stash[OBSERVATION_KEY] = done.observation
    item.stash[ARTIFACTS_KEY] = done.artifacts
    if done.provider_stop:
        item.session.shouldstop = done.provider_stop
    if done.failure is not None:
        raise done.failure


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach the Observation to the report as a plain dict, so it crosses xdist's wire."""
    report = yield
    if not isinstance(item, TaskItem):
        return report
    if call.when == "call":
        observation = item.stash.get(OBSERVATION_KEY, None)
        if observation is None:
            message = str(call.excinfo.value) if call.excinfo else "trial produced no observation"
            observation = error_observation(
                item.task_id, item.repeat, message, task=item.task, arm=arm_name(item.arm)
            )
    elif call.when == "setup" and report.failed and call.excinfo is not None:
        observation = error_observation(
            item.task_id,
            item.repeat,
            str(call.excinfo.value),
            task=item.task,
            arm=arm_name(item.arm),
        )
        if isinstance(call.excinfo.value, TaskError):  # a malformed task: its one line, no trace
            report.longrepr = item.repr_failure(call.excinfo)
    elif call.when == "setup" and report.skipped and OBSERVATION_KEY in item.stash:
        observation = item.stash[OBSERVATION_KEY]  # not started (budget), saying why
    else:
        return report
    setattr(report, REPORT_ATTRIBUTE, names.json_safe(json.loads(json.dumps(observation))))
    artifacts = item.stash.get(ARTIFACTS_KEY, None)
    if artifacts is not None and call.when == "call":
        setattr(report, ARTIFACTS_ATTRIBUTE, artifacts)
    return report
