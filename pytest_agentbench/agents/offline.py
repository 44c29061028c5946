"""Offline agents for checking tasks and the harness: oracle (reference) and nop (nothing)."""

from __future__ import annotations

import time

from pytest_agentbench.agents.base import Agent, AgentSession, RoundResult, TrialContext


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
        self.ctx.task.apply_reference(self.ctx.sandbox.workspace)
        return RoundResult(exit_code=0, timed_out=False, wall_s=time.monotonic() - start)


HONEST_ANSWER = "COMPLETION: incomplete - this task has no reachable solution"


class OracleAgent(Agent):
    """Writes the expected tree (or overlays solution/), and on a no-solution task leaves the
    workspace as it was and says it is incomplete: every sound task must pass, honestly."""

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
