"""One trial item's work, wherever it runs: inside pytest's call of the item (one trial at a
time), or ahead of it on a thread of its own (--agentbench-concurrency: run/ahead.py).

perform() reads the item but tells pytest nothing: it returns a TrialDone. What pytest is
told -- the Observation and artifacts on the item, the exception the call raises -- is
fixtures.run_trial's, on pytest's own thread and in the item's turn.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from pytest_agentbench.agents.receipts import TREATMENT_FILE
from pytest_agentbench.fs.wording import plural
from pytest_agentbench.grading.grade import Grade
from pytest_agentbench.plan.arm_trials import arm_name
from pytest_agentbench.plan.collect import (
    InfrastructureFailed,
    ProviderStopped,
    TaskItem,
    TrialFailed,
)
from pytest_agentbench.sandbox.base import InfrastructureError, Sandbox, start_sandbox
from pytest_agentbench.tasks.model import Task, TaskError
from pytest_agentbench.tasks.observation import InfraRetry, Observation, slot_task
from pytest_agentbench.trajectory.raw import ARCHIVE
from pytest_agentbench.trajectory.summary import TRAJECTORY_FILE
from pytest_agentbench.trial.artifacts import (
    FAILURE_FILE,
    scrub,
    secret_variables,
    trial_artifacts,
)
from pytest_agentbench.trial.process import process_parts
from pytest_agentbench.trial.rounds import GradeFn, Trial, TrialOutcome

# (task id, repeat, final workspace, final exact): keep.WorkspaceKeeper.keep, when keeping
KEEP_KEY = pytest.StashKey[Callable[[str, int, Path, bool], None]]()
SECRETS_KEY = pytest.StashKey[list[tuple[str, str]]]()
# How trials call the pytest_agentbench_grade hook, when not directly (run/ahead.py calls a
# conftest's grader on pytest's thread).
GRADE_KEY = pytest.StashKey[GradeFn]()


@dataclass
class TrialDone:
    """A finished trial as pytest will be told of it: its Observation and artifacts
    (scrubbed), and what the item's call raises (None: the trial ended exact)."""

    observation: Observation
    artifacts: dict[str, str | bytes]
    failure: Exception | None
    provider_stop: str | None = None  # the message that stops the session


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


def check_sandbox_kind(item: TaskItem, task: Task) -> None:
    """A Harbor task runs in its own image only: under another sandbox it errors at setup."""
    provider = process_parts(item.config)[2]
    if task.container is not None and provider.kind != "docker":
        raise TaskError(
            f"{task.source}: a Harbor task runs in the image its environment/Dockerfile builds: "
            f"run it with --sandbox=docker (this run uses --sandbox={provider.kind})"
        )


def trial_label(item: TaskItem) -> str:
    """The trial's name for its sandbox: task-r<k>, or task-<arm>-r<k> in a run with arms."""
    arm = f"-{item.arm.name}" if item.arm is not None else ""
    return f"{item.task_id}{arm}-r{item.repeat}"


def run_secrets(config: pytest.Config) -> list[tuple[str, str]]:
    """The secret-looking variables, read once: the environment is the run's."""
    if SECRETS_KEY not in config.stash:
        config.stash[SECRETS_KEY] = secret_variables()
    return config.stash[SECRETS_KEY]


def grader(config: pytest.Config) -> GradeFn:
    """How this run's trials grade a round: the pytest_agentbench_grade hook."""
    if GRADE_KEY in config.stash:
        return config.stash[GRADE_KEY]

    def grade(task: Task, workspace: Path) -> Grade:
        result: Grade = config.hook.pytest_agentbench_grade(task=task, workspace=workspace)
        return result

    return grade


def perform_alone(item: TaskItem) -> TrialDone:
    """The trial in a sandbox of its own, started and removed here (a trial run ahead)."""
    started = time.monotonic()
    try:
        sandbox = start_sandbox(process_parts(item.config)[2], item_task(item), trial_label(item))
    except InfrastructureError as error:
        return perform(item, None, error, started)
    with sandbox:
        return perform(item, sandbox, None, started)


def perform(
    item: TaskItem,
    sandbox: Sandbox | None,
    failure: InfrastructureError | None,
    started: float | None,
) -> TrialDone:
    """The trial (again in a fresh sandbox after an infrastructure failure, up to
    --agentbench-retry-infra times), keeping its Observation and the failed attempts'
    artifacts, then the judgement. failure: why the given sandbox could not start."""
    config = item.config
    settings, agent, provider = process_parts(config)
    task = item_task(item)
    keep = config.stash.get(KEEP_KEY, None)
    trial = Trial(
        task=task,
        repeat=item.repeat,
        agent=agent,
        provider=provider,
        settings=settings,
        grade=grader(config),
        trial_id=trial_label(item),
        keep=partial(keep, slot_task(task.id, arm_name(item.arm)), item.repeat)
        if keep is not None
        else None,
        arm=item.arm,
        secrets=run_secrets(config),
    )
    secrets = trial.secrets
    outcome = trial.infrastructure_outcome(failure) if failure else trial.run(sandbox, started)
    retries: list[InfraRetry] = []
    artifacts: dict[str, str | bytes] = {}
    while outcome.infrastructure and len(retries) < settings.retry_infra:
        detail = scrub(outcome.failure_text, secrets=secrets)
        retry: InfraRetry = {"cause": outcome.infrastructure, "detail": detail}
        if "engine" in outcome.observation:
            retry["engine"] = outcome.observation["engine"]
        retries.append(retry)
        for name, content in outcome_artifacts(outcome, secrets).items():
            artifacts[f"attempt-{len(retries)}/{name}"] = content
        sandbox = None  # the retry is a fresh trial: Trial.run makes and removes its sandbox
        outcome = trial.run(None)
    observation = outcome.observation
    if retries:
        observation["infra_retries"] = retries
    if item.arm is not None and sandbox is not None:  # what else instructed it, before it goes
        observation["skills_found"] = agent.skills_found(sandbox.home)
        if item.arm.plugins:  # an arm without plugins keeps the record it had
            observation["plugins_found"] = agent.plugins_found(sandbox.home)
    for key in ("final_message", "verdict_reason"):  # the agent's words: scrubbed as artifacts are
        text = observation.get(key)
        if isinstance(text, str):
            observation[key] = scrub(text, secrets=secrets)
    if "detail" in observation:
        observation["detail"] = scrub(observation["detail"], secrets=secrets)
    artifacts = {**outcome_artifacts(outcome, secrets), **artifacts}
    if outcome.provider_stop:
        message = f"{item.nodeid}: provider stop ({outcome.provider_stop}); trial not scored"
        return TrialDone(observation, artifacts, ProviderStopped(message), message)
    if outcome.infrastructure:
        tries = plural(len(retries) + 1, "attempt")
        return TrialDone(
            observation,
            artifacts,
            InfrastructureFailed(
                f"infrastructure failure ({outcome.infrastructure}), {tries}; trial not scored\n"
                + outcome.failure_text
            ),
        )
    if not observation["final_exact"]:
        if outcome.failure_text:  # what the terminal shows: the diff against the expected tree
            artifacts[FAILURE_FILE] = scrub(outcome.failure_text, secrets=secrets) + "\n"
        return TrialDone(
            observation, artifacts, TrialFailed(outcome.failure_text or "the result is not exact")
        )
    return TrialDone(observation, artifacts, None)


def outcome_artifacts(
    outcome: TrialOutcome, secrets: list[tuple[str, str]]
) -> dict[str, str | bytes]:
    """The artifacts of one run of the trial (trial_artifacts), its trajectory and raw
    evidence, and for an infrastructure failure what ended it (infrastructure.txt)."""
    artifacts: dict[str, str | bytes] = {
        **trial_artifacts(
            outcome.results, outcome.final_diff, secrets, outcome.verifier_output, outcome.change
        )
    }
    if outcome.trajectory:
        artifacts[TRAJECTORY_FILE] = outcome.trajectory  # built from scrubbed evidence
    if outcome.raw_archive:
        artifacts[ARCHIVE] = outcome.raw_archive
    if outcome.treatment is not None:
        text = json.dumps(outcome.treatment, indent=2, sort_keys=True)
        artifacts[TREATMENT_FILE] = scrub(text, secrets=secrets) + "\n"
    if outcome.infrastructure:
        artifacts["infrastructure.txt"] = scrub(outcome.failure_text, secrets=secrets) + "\n"
    return artifacts
