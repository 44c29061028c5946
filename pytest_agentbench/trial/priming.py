"""A warm arm's priming run: the provider's prefix cache is primed before the trial.

As Reasonix's `-cache warm`: one step of the same CLI with the same configuration (model,
delivered guidance and skills, prompt, system prompt) goes first, so the trial's requests
find their common prefix already cached. It runs in a scratch copy of the task's input tree,
removed after it; the meter lets one model request with tools through (later ones are
refused), and a CLI that takes a step cap gets 1. Its tokens, requests and cost are kept
apart (the Observation's `priming`), never in the trial's. It is the harness's set-up, not
the agent's work: when it fails the trial is an infrastructure failure (or a provider stop
when the provider refused it), never scored.
"""

from __future__ import annotations

import time

from pytest_agentbench.agents.base import Agent, RoundResult, TokenUsage, TrialContext
from pytest_agentbench.meter.records import summarize
from pytest_agentbench.sandbox.base import InfrastructureError, SandboxProvider, start_sandbox
from pytest_agentbench.tasks.arms import Arm
from pytest_agentbench.tasks.observation import Priming, Tokens

UNANSWERED = "priming_unanswered"  # no model request of the priming run was answered


def prime(
    agent: Agent,
    provider: SandboxProvider,
    ctx: TrialContext,
    prompt: str,
    trial_id: str,
) -> tuple[Priming, str | None]:
    """Run the priming step for the trial ctx describes (its sandbox is not used); returns its
    record and, when the provider refused it, the provider stop. A failure of the machine is
    in the record's cause and raised by the caller as the trial's."""
    started = time.monotonic()
    try:
        with start_sandbox(provider, ctx.task, f"{trial_id}-prime") as scratch:
            scratch_ctx = TrialContext(
                ctx.task,
                ctx.repeat,
                ctx.attempt,
                scratch,
                ctx.seed,
                ctx.settings,
                ctx.arm,
                priming=True,
            )
            session = agent.start(scratch_ctx)
            try:
                timeout = ctx.settings.timeout_for(ctx.task.timeout)
                result = session.run_round(prompt, 0, timeout)
            finally:
                session.close()
    except InfrastructureError as error:
        wall = round(time.monotonic() - started, 6)
        failed: Priming = {
            "cause": error.cause,
            "wall_s": wall,
            "tokens": None,
            "cost_usd": None,
            "requests": None,
        }
        return failed, None
    return _record(result), result.provider_stop


def _record(result: RoundResult) -> Priming:
    """The priming run's figures and, when it did not prime, why."""
    priming: Priming = {
        "cause": result.infra_failure,
        "wall_s": round(result.wall_s, 6),
        "tokens": _tokens(result.tokens),
        "cost_usd": result.cost_usd,
        "requests": None,
    }
    if result.meter_log is not None:
        metered = summarize(result.meter_log)
        priming["metered"] = metered
        priming["requests"] = metered["requests"]
        answered = any(
            isinstance(r.get("status"), int)
            and 200 <= r["status"] < 300
            and not r.get("injected")
            and r.get("protocol")
            and r.get("has_tools") is not False
            for r in result.meter_log
        )
        if priming["cause"] is None and not result.provider_stop and not answered:
            priming["cause"] = UNANSWERED
    return priming


def _tokens(usage: TokenUsage | None) -> Tokens | None:
    if usage is None:
        return None
    return {
        "input": usage.input,
        "cached_input": usage.cached_input,
        "output": usage.output,
        "reasoning": usage.reasoning,
        "cache_write": usage.cache_write,
    }


def warm_arm(arm: Arm | None) -> bool:
    """Whether trials of this arm are primed first."""
    return arm is not None and arm.warm
