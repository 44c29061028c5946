"""Fixtures that lay out a trial, the trial's call object, and the Observation on the report."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.agents.base import Agent
from pytest_agentbench.fs import names
from pytest_agentbench.fs.wording import plural
from pytest_agentbench.grading.grade import Grade
from pytest_agentbench.plan.arm_trials import arm_name
from pytest_agentbench.plan.collect import (
    SETTINGS_KEY,
    InfrastructureFailed,
    ProviderStopped,
    TaskItem,
    TrialFailed,
)
from pytest_agentbench.sandbox import provider_for
from pytest_agentbench.sandbox.base import (
    InfrastructureError,
    Sandbox,
    SandboxProvider,
    start_sandbox,
)
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.model import Task, TaskError
from pytest_agentbench.tasks.observation import (
    OBSERVATION_KEY,
    REPORT_ATTRIBUTE,
    InfraRetry,
    error_observation,
    slot_task,
)
from pytest_agentbench.trajectory.raw import ARCHIVE
from pytest_agentbench.trajectory.summary import TRAJECTORY_FILE
from pytest_agentbench.trial.artifacts import REPORT_ATTRIBUTE as ARTIFACTS_ATTRIBUTE
from pytest_agentbench.trial.artifacts import scrub, secret_variables, trial_artifacts
from pytest_agentbench.trial.rounds import Trial, TrialOutcome

ARTIFACTS_KEY = pytest.StashKey[dict[str, str | bytes]]()
AGENT_KEY = pytest.StashKey[Agent]()
SECRETS_KEY = pytest.StashKey[list[tuple[str, str]]]()
# (task id, repeat, final workspace, final exact): keep.WorkspaceKeeper.keep, when keeping
KEEP_KEY = pytest.StashKey[Callable[[str, int, Path, bool], None]]()
SANDBOX_FAILURE_KEY = pytest.StashKey[InfrastructureError]()  # the trial's sandbox did not start
STARTED_KEY = pytest.StashKey[float]()  # when the trial's set-up began (time.monotonic)


def unknown_agent(config: pytest.Config, name: str) -> pytest.UsageError:
    """The usage error for an agent no plugin offers, listing the ones that are offered."""
    names = sorted({n for names in config.hook.pytest_agentbench_agent_names() for n in names})
    return pytest.UsageError(f"--agent {name!r}: unknown agent; available: {', '.join(names)}")


def make_agent(config: pytest.Config, settings: Settings) -> Agent:
    """The agent named by --agent, from whichever plugin or conftest.py offers it."""
    agent = config.hook.pytest_agentbench_make_agent(
        name=settings.agent, settings=settings, config=config
    )
    if agent is None:
        raise unknown_agent(config, settings.agent)
    return agent


def process_agent(config: pytest.Config, settings: Settings) -> Agent:
    """This process's agent, made once and shared by the fixtures, header and reporter; it
    learns its sandbox before anyone asks either of them anything."""
    if AGENT_KEY not in config.stash:
        agent = make_agent(config, settings)
        agent.use_sandbox(provider_for(config, settings))
        if not config.option.collectonly:
            agent.preflight()
        config.stash[AGENT_KEY] = agent
    return config.stash[AGENT_KEY]


def agent_info(config: pytest.Config, settings: Settings) -> dict[str, Any]:
    """What the run records about its agent (name, CLI version, metering), from this
    process's agent."""
    return process_agent(config, settings).info()


def process_parts(config: pytest.Config) -> tuple[Settings, Agent, SandboxProvider]:
    """The run's settings, this process's agent and its sandbox provider (which the agent has
    learned, so it may have placed the trials)."""
    settings = config.stash[SETTINGS_KEY]
    return settings, process_agent(config, settings), provider_for(config, settings)


def item_task(item: pytest.Item) -> Task:
    """The task of a trial item; a malformed task raises its TaskError, naming the file and
    the fix, so the trial errors at setup. Any other item asked for a trial-only fixture."""
    if not isinstance(item, TaskItem):
        pytest.fail(
            f"{item.nodeid}: agentbench_task, agentbench_sandbox and agentbench_workspace are "
            "trial-only: they belong to the benchmark's task items (task x repeat), not to an "
            "ordinary test. An ordinary test may use agentbench_settings, agentbench_agent and "
            "agentbench_sandbox_provider (docs/hooks.md, Fixtures)",
            pytrace=False,
        )
    if item.task is None:
        raise TaskError(item.task_error or "task could not be loaded")
    return item.task


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
    not start: an infrastructure failure, which the trial records).

    The one fixture a trial asks for: it finds the task, agent and provider itself, since
    every fixture a trial's closure holds costs pytest a lookup per item.
    """
    item = request.node
    task = item_task(item)
    provider = process_parts(item.config)[2]
    if task.container is not None and provider.kind != "docker":
        raise TaskError(
            f"{task.source}: a Harbor task runs in the image its environment/Dockerfile builds: "
            f"run it with --sandbox=docker (this run uses --sandbox={provider.kind})"
        )
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


def trial_label(item: TaskItem) -> str:
    """The trial's name for its sandbox: task-r<k>, or task-<arm>-r<k> in a run with arms."""
    arm = f"-{item.arm.name}" if item.arm is not None else ""
    return f"{item.task_id}{arm}-r{item.repeat}"


def run_trial(item: TaskItem, sandbox: Sandbox | None) -> None:
    """What every TaskItem runs: the trial (again in a fresh sandbox after an infrastructure
    failure, up to --agentbench-retry-infra times), keeping its Observation and the failed
    attempts' artifacts, then the judgement."""
    config = item.config
    settings, agent, provider = process_parts(config)
    task = item_task(item)

    def grade(task: Task, workspace: Path) -> Grade:
        result: Grade = config.hook.pytest_agentbench_grade(task=task, workspace=workspace)
        return result

    keep = config.stash.get(KEEP_KEY, None)

    trial = Trial(
        task=task,
        repeat=item.repeat,
        agent=agent,
        provider=provider,
        settings=settings,
        grade=grade,
        trial_id=trial_label(item),
        keep=partial(keep, slot_task(task.id, arm_name(item.arm)), item.repeat)
        if keep is not None
        else None,
        arm=item.arm,
        secrets=run_secrets(config),
    )
    secrets = trial.secrets
    failure = item.stash.get(SANDBOX_FAILURE_KEY, None)
    started = item.stash.get(STARTED_KEY, None)
    outcome = trial.infrastructure_outcome(failure) if failure else trial.run(sandbox, started)
    retries: list[InfraRetry] = []
    artifacts: dict[str, str | bytes] = {}
    while outcome.infrastructure and len(retries) < settings.retry_infra:
        detail = scrub(outcome.failure_text, secrets=secrets)
        retries.append({"cause": outcome.infrastructure, "detail": detail})
        for name, content in outcome_artifacts(outcome, secrets).items():
            artifacts[f"attempt-{len(retries)}/{name}"] = content
        sandbox = None  # the retry is a fresh trial: Trial.run makes and removes its sandbox
        outcome = trial.run(None)
    if retries:
        outcome.observation["infra_retries"] = retries
    if item.arm is not None and sandbox is not None:  # what else instructed it, before it goes
        outcome.observation["skills_found"] = agent.skills_found(sandbox.home)
    item.stash[OBSERVATION_KEY] = outcome.observation
    item.stash[ARTIFACTS_KEY] = {**outcome_artifacts(outcome, secrets), **artifacts}
    for key in ("final_message", "verdict_reason"):  # the agent's words: scrubbed as artifacts are
        text = outcome.observation.get(key)
        if isinstance(text, str):
            outcome.observation[key] = scrub(text, secrets=secrets)
    if "detail" in outcome.observation:
        outcome.observation["detail"] = scrub(outcome.observation["detail"], secrets=secrets)
    if outcome.provider_stop:
        message = f"{item.nodeid}: provider stop ({outcome.provider_stop}); trial not scored"
        item.session.shouldstop = message
        raise ProviderStopped(message)
    if outcome.infrastructure:
        tries = plural(len(retries) + 1, "attempt")
        raise InfrastructureFailed(
            f"infrastructure failure ({outcome.infrastructure}), {tries}; trial not scored\n"
            + outcome.failure_text
        )
    if not outcome.observation["final_exact"]:
        raise TrialFailed(outcome.failure_text or "the result is not exact")


def run_secrets(config: pytest.Config) -> list[tuple[str, str]]:
    """The secret-looking variables, read once: the environment is the run's."""
    if SECRETS_KEY not in config.stash:
        config.stash[SECRETS_KEY] = secret_variables()
    return config.stash[SECRETS_KEY]


def outcome_artifacts(
    outcome: TrialOutcome, secrets: list[tuple[str, str]]
) -> dict[str, str | bytes]:
    """The artifacts of one run of the trial (trial_artifacts), its trajectory and raw
    evidence, and for an infrastructure failure what ended it (infrastructure.txt)."""
    artifacts: dict[str, str | bytes] = {
        **trial_artifacts(outcome.results, outcome.final_diff, secrets, outcome.verifier_output)
    }
    if outcome.trajectory:
        artifacts[TRAJECTORY_FILE] = outcome.trajectory  # built from scrubbed evidence
    if outcome.raw_archive:
        artifacts[ARCHIVE] = outcome.raw_archive
    if outcome.infrastructure:
        artifacts["infrastructure.txt"] = scrub(outcome.failure_text, secrets=secrets) + "\n"
    return artifacts


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
