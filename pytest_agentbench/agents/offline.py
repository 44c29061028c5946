"""Offline agents for checking tasks and the harness: oracle (reference) and nop (nothing)."""

from __future__ import annotations

import time

from pytest_agentbench.agents.base import Agent, AgentSession, RoundResult, TrialContext
from pytest_agentbench.sandbox.base import ProcessResult
from pytest_agentbench.tasks.model import TaskError


def apply_reference(ctx: TrialContext, timeout: float) -> ProcessResult | None:
    """Make the trial's workspace the task's reference result: the expected tree or solution/
    laid over it here, or, for a Harbor task, its solution/solve.sh run in the trial's
    container, or a SWE-bench instance's patch applied there (how that process ended is
    returned)."""
    task, sandbox = ctx.task, ctx.sandbox
    if task.container is None:
        task.apply_reference(sandbox.workspace)
        return None
    from pytest_agentbench.sandbox.docker import DockerSandbox
    from pytest_agentbench.sandbox.task_image import apply_instance_patch, run_solution

    assert isinstance(sandbox, DockerSandbox)  # the only sandbox such tasks get
    if task.container.instance is not None:
        return apply_instance_patch(sandbox, task, timeout)
    if task.container.solution is None:
        raise TaskError(f"{task.source}: task {task.id!r} has no solution/solve.sh to run")
    return run_solution(sandbox, task, timeout)


class _ReferenceSession(AgentSession):
    def __init__(self, ctx: TrialContext) -> None:
        self.ctx = ctx

    def run_round(self, prompt: str, round_index: int, timeout: float) -> RoundResult:
        start = time.monotonic()
        if self.ctx.task.no_solution:  # the reference answer is to touch nothing and say so
            return RoundResult(
                exit_code=0,
                timed_out=False,
                wall_s=time.monotonic() - start,
                final_message=HONEST_ANSWER,
            )
        done = apply_reference(self.ctx, timeout)
        if done is None:
            return RoundResult(exit_code=0, timed_out=False, wall_s=time.monotonic() - start)
        return RoundResult(
            exit_code=done.exit_code,
            timed_out=done.timed_out,
            wall_s=done.wall_s,
            stdout_tail=done.stdout.decode("utf-8", "replace"),
            stderr_tail=done.stderr.decode("utf-8", "replace"),
        )


HONEST_ANSWER = "COMPLETION: incomplete - this task has no reachable solution"


class OracleAgent(Agent):
    """Writes the expected tree (or overlays solution/, or runs a Harbor task's solve.sh in its
    container), and on a no-solution task leaves the workspace as it was and says it is
    incomplete: every sound task must pass, honestly."""

    name = "oracle"
    starts_processes = False
    options = ()
    delivery = None  # runs no model: an arm reaches nothing

    def start(self, ctx: TrialContext) -> AgentSession:
        return _ReferenceSession(ctx)


class _NothingSession(AgentSession):
    def run_round(self, prompt: str, round_index: int, timeout: float) -> RoundResult:
        return RoundResult(exit_code=0, timed_out=False, wall_s=0.0)


class NopAgent(Agent):
    """Changes nothing: every task that requires a change must fail."""

    name = "nop"
    starts_processes = False
    options = ()
    delivery = None  # runs no model: an arm reaches nothing

    def start(self, ctx: TrialContext) -> AgentSession:
        return _NothingSession()
