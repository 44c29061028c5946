"""The Agent protocol: an agent starts a session per trial and runs rounds in it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.agents.delivery import (
    Places,
    plugins_in,
    refusals,
    skills_in,
    write_delivery,
)
from pytest_agentbench.sandbox.base import Sandbox, SandboxProvider
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.arms import Arm
from pytest_agentbench.tasks.model import Task
from pytest_agentbench.tasks.segments import LegPlan


@dataclass
class TokenUsage:
    """Token counts with one meaning across agents; None where the agent did not say.

    input counts every prompt token including cached ones; cached_input is the part of it
    served from cache, cache_write the part written to the cache (priced apart); output
    includes reasoning.
    """

    input: int | None = None
    cached_input: int | None = None
    output: int | None = None
    reasoning: int | None = None
    cache_write: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        return asdict(self)


@dataclass
class RoundResult:
    """How one agent round ended and what it reported about itself."""

    exit_code: int | None
    timed_out: bool
    wall_s: float
    tokens: TokenUsage | None = None
    cost_usd: float | None = None
    turns: int | None = None
    tool_calls: int | None = None
    session_id: str | None = None
    model_reported: str | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    provider_stop: str | None = None
    # The agent's last message to the user (its end, at most verdict.MESSAGE_LIMIT
    # characters); None when the agent gave none.
    final_message: str | None = None
    # The requests the metering proxy saw in this round (meter.records); None: not metered.
    meter_log: list[dict[str, Any]] | None = None
    # The wire failure (meter.records.wire_failure) that ended the round: not the agent's.
    infra_failure: str | None = None
    # How the round's last model call failed (meter.records.failed_call); None: it did not.
    failed_call: str | None = None
    # The round's raw evidence by stream (trajectory.raw.STREAMS: the CLI's events, the wire
    # the meter saw, stdout, ...), scrubbed of credentials; the trial keeps it compressed.
    raw: dict[str, str] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        """Executed cleanly: exit code 0 and no timeout."""
        return self.exit_code == 0 and not self.timed_out


@dataclass
class TrialContext:
    """What a session needs to know about its trial."""

    task: Task
    repeat: int
    attempt: int
    sandbox: Sandbox
    seed: int
    settings: Settings
    arm: Arm | None = None  # the arm the trial runs in, with --arms: what it receives
    plan: LegPlan = field(default_factory=LegPlan)  # its legs: session turns 0..legs-1
    # A warm arm's priming run (trial/priming.py): one step, capped where the agent can be.
    priming: bool = False

    def step_limit(self, turn: int) -> int | None:
        """The step cap of session turn `turn`: a leg's share of max_steps, else max_steps."""
        return self.plan.step_limit(turn, self.task.max_steps)


def meter_asked(settings: Settings) -> str | None:
    """The option that requires every trial to be metered, or None: --agentbench-meter=on,
    and faults and the request log, which act through the meter."""
    if settings.meter == "on":
        return "--agentbench-meter=on"
    if settings.faults:
        return "--agentbench-faults"
    if settings.meter_log is not None:
        return "--agentbench-meter-log"
    return None


class AgentSession(ABC):
    """One agent conversation in one workspace; recovery rounds continue it."""

    # The treatment receipt (agents/receipts.py) of a trial with an arm: what the CLI saw
    # against what the arm declares, kept as the trial's treatment.json; None: none made.
    receipt: dict[str, Any] | None = None

    @abstractmethod
    def run_round(self, prompt: str, round_index: int, timeout: float) -> RoundResult:
        """Run one session turn: the legs (ctx.plan; one unless segmented) get the task and
        then continuations, later rounds verifier feedback; every turn after 0 resumes."""

    def close(self) -> None:  # noqa: B027 - most sessions hold nothing
        """Release anything the session holds (processes are already gone)."""


class Agent(ABC):
    """An agent kind, made once per process from the run's Settings."""

    name: str
    starts_processes = True  # False: the agent edits the workspace itself, in this process
    # The --agent-opt keys the agent reads (shell patterns); None: not declared, not checked.
    options: tuple[str, ...] | None = None
    # Where an arm's guidance and skills go in the trial's private home; a component with no
    # place is refused before any trial. None: the agent runs no model, nothing is delivered
    # and the report says delivery: none.
    delivery: Places | None = Places()
    # The switch by which the agent enforces each capability of the arms file's
    # [capabilities]; one set to other than its default and missing here is refused.
    capability_switches: dict[str, str] = {}  # noqa: RUF012 - read only, per class

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        allowed = self.allowed_options()
        if allowed is None:
            return
        unknown = sorted(
            k for k in settings.agent_opts if not any(fnmatchcase(k, p) for p in allowed)
        )
        if unknown:
            raise pytest.UsageError(
                f"--agent-opt {', '.join(unknown)}: unknown option(s) for --agent={self.name}; "
                f"allowed: {', '.join(allowed) or 'none'}"
            )

    @classmethod
    def allowed_options(cls) -> tuple[str, ...] | None:
        """The --agent-opt keys this agent accepts; any other key is a usage error."""
        return cls.options

    # Whether the agent reaches a model provider the harness can point at the metering proxy
    # (codex, claude, opencode: agents.cli_base); other agents are never metered.
    meterable = False

    def preflight(self) -> None:
        """Raise a usage error when no trial could start (credentials missing), or when the run
        asks for the meter and this agent is never metered; asked once, before the first
        trial, unless pytest only collects."""
        asked = meter_asked(self.settings)
        if asked and not self.meterable:
            raise pytest.UsageError(
                f"{asked}: --agent={self.name} is never metered: only codex, claude and "
                "opencode reach a model provider the harness can point at the meter "
                "(docs/metering.md); drop the option"
            )

    def info(self) -> dict[str, Any]:
        """Facts for the run header and report: version, model, effort."""
        return {
            "name": self.name,
            "model": self.settings.model,
            "reasoning": self.settings.reasoning,
        }

    def use_sandbox(self, provider: SandboxProvider) -> None:
        """Learn, once before the first trial, how to run inside provider's sandboxes.

        An agent that starts no process has trials holding nothing but the task's trees, small
        and bounded: they go in memory, where the provider would put agents' homes.
        """
        if not self.starts_processes:
            provider.keep_trials_in_memory()

    @abstractmethod
    def start(self, ctx: TrialContext) -> AgentSession:
        """A fresh session for one trial attempt."""

    def deliver(self, arm: Arm, home: Path) -> None:
        """Put the arm's guidance, skills and plugins where the agent reads them in its private home
        (host path), before its first round. Never the workspace, never the prompt."""
        if self.delivery is not None:
            write_delivery(arm, home, self.delivery)

    def delivery_report(self) -> str | dict[str, str]:
        """Where arms are delivered, for the report: "none", or each component's home path."""
        if self.delivery is None:
            return "none"
        return self.delivery.report()

    def skills_found(self, home: Path) -> list[str] | None:
        """The skills in the trial's home after it ran (the CLI's own included); None for an
        agent without a skills folder."""
        if self.delivery is None or self.delivery.skills is None:
            return None
        return skills_in(home / self.delivery.skills)

    def plugins_found(self, home: Path) -> list[str] | None:
        """The plugins installed in the trial's home after it ran; None for an agent that
        installs none."""
        folder = self.delivery.plugins_folder if self.delivery is not None else None
        return None if folder is None else plugins_in(home / folder)

    def option(self, key: str, default: str | None = None) -> str | None:
        return self.settings.agent_opts.get(key, default)


def capability_refusals(agent: Agent, arms: Iterable[Arm]) -> list[str]:
    """One line per capability the arms file sets that the agent cannot enforce (none for an
    agent that runs no model: it spawns nothing)."""
    first = next(iter(arms), None)
    if first is None or agent.delivery is None:
        return []
    return [
        f"[capabilities] {key}: --agent={agent.name} cannot enforce it (its CLI has no "
        "switch for it); drop it from the arms file or use --agent=codex or --agent=claude"
        for key in first.capabilities.set_keys()
        if key not in agent.capability_switches
    ]


def check_delivery(agent: Agent, arms: Iterable[Arm], source: str = "--arms") -> None:
    """Refuse, before any trial, an arm component the agent cannot receive natively, and a
    capability it cannot enforce."""
    arms = list(arms)
    problems = refusals(agent.name, agent.delivery, arms) + capability_refusals(agent, arms)
    if problems:
        raise pytest.UsageError(f"{source}: " + f"\n{source}: ".join(problems))
