"""One trial: attempts, rounds and recoveries, ending in a JSON-safe Observation."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pytest_agentbench.agents.base import Agent, RoundResult, TokenUsage, TrialContext
from pytest_agentbench.fs import names
from pytest_agentbench.fs.sizes import format_size
from pytest_agentbench.grading.diffview import render_grade
from pytest_agentbench.grading.grade import Grade
from pytest_agentbench.grading.similarity import changed_lines
from pytest_agentbench.meter.records import summarize
from pytest_agentbench.plan.arm_trials import arm_prompt
from pytest_agentbench.sandbox.base import (
    InfrastructureError,
    Sandbox,
    SandboxProvider,
    start_sandbox,
)
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.arms import Arm
from pytest_agentbench.tasks.model import Task, TaskError
from pytest_agentbench.tasks.observation import (
    INFRASTRUCTURE,
    PROVIDER_STOP,
    SCORED,
    AgentFacts,
    AttemptRecord,
    LegRecord,
    Observation,
    Priming,
    RoundRecord,
    Tokens,
)
from pytest_agentbench.tasks.segments import LegPlan, plan_legs, trial_legs
from pytest_agentbench.tasks.verdict import TAIL_LIMIT, bounded, parse_verdict
from pytest_agentbench.trajectory.paths import PathNormaliser
from pytest_agentbench.trajectory.raw import Evidence, RawArchive, RoundEvidence
from pytest_agentbench.trajectory.summary import atif_text, summarise
from pytest_agentbench.trial.artifacts import scrub, trial_change
from pytest_agentbench.trial.measuring import task_reference, trial_measures
from pytest_agentbench.trial.priming import prime, warm_arm

FEEDBACK_PREAMBLE = (
    "The check of your result failed. Continue working in the current workspace to complete "
    "the original task. The diagnostics below contain no expected content."
)

GradeFn = Callable[[Task, Path], Grade]
KeepFn = Callable[[Path, bool], None]  # (final workspace, final exact), before it is removed


def feedback_prompt(task: Task, grade: Grade, result: RoundResult) -> str:
    """Verifier feedback for a recovery round: paths and execution facts, never expected bytes."""
    diagnostics = {
        "passed": False,
        "exact": task.round_exact(grade.exact, result.clean),
        "differing": grade.differing,
        "missing": grade.missing,
        "unexpected": grade.unexpected,
        "invalid": grade.invalid,
        "timed_out": result.timed_out,
        "exit_code": result.exit_code,
    }
    return f"{FEEDBACK_PREAMBLE}\n\n{json.dumps(diagnostics, indent=2)}\n"


def sandbox_paths(task: Task, sandbox: Sandbox) -> PathNormaliser:
    """How the sandbox's paths are shown in kept artifacts: `<workspace>`, `<task>`, `~`."""
    task_dir = task.source
    if Path(task_dir).suffix in (".toml", ".json", ".yaml", ".yml", ".md"):
        task_dir = str(Path(task_dir).parent)
    return PathNormaliser(
        workspace=[sandbox.inner_workspace, str(sandbox.workspace)],
        task=[task_dir],
        home=[sandbox.inner_home, str(sandbox.home)],
    )


def sum_tokens(usages: list[TokenUsage | None]) -> Tokens | None:
    """Per-field totals; a field any round did not report is unknown for the whole trial."""
    if not usages or all(usage is None for usage in usages):
        return None

    def total(key: str) -> int | None:
        return sum_known_int([getattr(u, key) if u is not None else None for u in usages])

    return {
        "input": total("input"),
        "cached_input": total("cached_input"),
        "output": total("output"),
        "reasoning": total("reasoning"),
        "cache_write": total("cache_write"),
    }


def sum_known(values: list[float | None]) -> float | None:
    """The total, or None when any part is unknown (unknown is never counted as zero)."""
    known = [v for v in values if v is not None]
    return None if not values or len(known) < len(values) else float(sum(known))


def sum_known_int(values: list[int | None]) -> int | None:
    total = sum_known([float(v) if v is not None else None for v in values])
    return None if total is None else int(total)


@dataclass
class TrialOutcome:
    """The Observation plus the human-readable story of the last failed check."""

    observation: Observation
    failure_text: str = ""
    provider_stop: str | None = None
    results: list[RoundResult] = field(default_factory=list)
    final_diff: str = ""  # the last attempt's workspace against the input tree
    verifier_output: str = ""  # the last grade's verifier output (its tail), for the artifacts
    infrastructure: str | None = None  # the infrastructure failure's cause: not scored
    raw_archive: bytes = b""  # raw.jsonl.gz: the rounds' raw evidence (trajectory.raw)
    trajectory: str = ""  # trajectory.json: the ATIF export
    change: str = ""  # change.patch: the last attempt's whole change, up to its limit
    treatment: dict[str, Any] | None = None  # treatment.json: the last attempt's receipt


class AttemptEnd(NamedTuple):
    """How one attempt ended, with the grade of its last round (None before any grading)."""

    exact: bool
    failure_text: str
    stop: str | None
    grade: Grade | None
    over_disk: bool = False  # the workspace grew past --sandbox-disk: nothing may read it
    infra: str | None = None  # an infrastructure failure's cause: the machine ended it


@dataclass
class Trial:
    """Runs one task x repeat: attempt 0 in the given sandbox, retries in fresh ones."""

    task: Task
    repeat: int
    agent: Agent
    provider: SandboxProvider
    settings: Settings
    grade: GradeFn
    trial_id: str
    keep: KeepFn | None = None  # set by --agentbench-keep
    arm: Arm | None = None  # the arm the trial runs in, with --arms
    secrets: list[tuple[str, str]] = field(default_factory=list)  # artifacts.secret_variables
    # The current run's rounds' evidence, its archive, and how the current sandbox's paths
    # are shown: set afresh by run() and each attempt.
    _evidence: list[RoundEvidence] = field(init=False, default_factory=list)
    _agent_s: float = field(init=False, default=0.0)  # measured, whatever the agent reports
    _archive: RawArchive = field(init=False, default_factory=RawArchive)
    _paths: PathNormaliser = field(init=False, default_factory=lambda: PathNormaliser([], [], []))
    _priming: Priming | None = field(init=False, default=None)  # the last attempt's, if warm
    _treatment: dict[str, Any] | None = field(init=False, default=None)  # the last receipt
    _legs: list[LegRecord] = field(init=False, default_factory=list)  # every attempt's legs

    @property
    def plan(self) -> LegPlan:
        """The trial's legs (its arm's segments, else its task's, else the run's), their
        steers and step shares; a budget too small to split is the task's error."""
        task, settings = self.task, self.settings
        legs = trial_legs(settings.segments, task.segments, self.arm.segments if self.arm else None)
        try:
            return plan_legs(legs, settings.steers, task.max_steps)
        except ValueError as error:
            raise TaskError(f"{task.source}: {error}") from None

    def run(self, first_sandbox: Sandbox | None, started: float | None = None) -> TrialOutcome:
        """The trial, attempt 0 in first_sandbox (a fresh one when None: the given one could
        not start, or this is a retry after an infrastructure failure); started is when its
        set-up began (time.monotonic), for the time the harness took."""
        started = time.monotonic() if started is None else started
        self._evidence = []
        self._legs = []
        self._priming = None
        self._treatment = None
        self._agent_s = 0.0
        self._archive = RawArchive(self.settings.raw_limit)
        rounds: list[RoundRecord] = []
        results: list[RoundResult] = []
        end = AttemptEnd(False, "", None, None)
        attempts = 0
        final_diff = verifier_output = ""
        change: str | None = None  # None: the final workspace could not be read
        log: list[AttemptRecord] = []
        engine: str | None = None
        for attempt in range(self.settings.retry_failures + 1):
            attempts += 1
            given = first_sandbox if attempt == 0 else None
            sandbox = given
            before = len(results)
            try:  # the workspace is read before its sandbox closes
                try:
                    if sandbox is None:
                        name = f"{self.trial_id}-a{attempt}"
                        sandbox = start_sandbox(self.provider, self.task, name)
                    engine = sandbox.engine
                    end = self._attempt(attempt, sandbox, rounds, results)
                except InfrastructureError as error:
                    end = AttemptEnd(False, str(error), None, None, infra=error.cause)
                verifier_output = self._paths.text(end.grade.verifier_output) if end.grade else ""
                change, final_diff = self._read_change(attempt, end, sandbox)
            finally:
                if sandbox is not None and sandbox is not given:
                    sandbox.close()
            ran = results[before:]
            log.append(
                {
                    "attempt": attempt,
                    "wall_s": round(sum(r.wall_s for r in ran), 6) if ran else None,
                    "changed": None if change is None else bool(change),
                }
            )
            if end.exact or end.stop or end.infra:
                break
        observation = self._observation(rounds, results, attempts, end)
        observation["attempt_log"] = log
        if engine is not None:
            observation["engine"] = engine
        # Against an expected tree every passing trial ends in the same tree: their likeness
        # says nothing. Only a verifier lets different changes pass.
        exact_graded = self.task.grader_kind == "exact"
        observation["changed_lines"] = None if exact_graded else changed_lines(final_diff)
        observation["measures"], observation["measure_notes"] = trial_measures(
            self.task, change, self.settings, self.provider
        )
        observation["measure_reference"] = task_reference(self.task, change, self.settings)
        failed = results[-1].failed_call if results else None
        if failed and not end.exact and not end.infra and not final_diff:
            observation["failed_call"] = failed
        archive, trajectory = self._trajectory(observation, results, final_diff, started)
        return TrialOutcome(
            observation,
            end.failure_text,
            end.stop,
            results,
            final_diff,
            verifier_output,
            end.infra,
            archive,
            trajectory,
            change or "",
            self._treatment,
        )

    def _read_change(
        self, attempt: int, end: AttemptEnd, sandbox: Sandbox | None
    ) -> tuple[str | None, str]:
        """The attempt's whole change (None: its workspace may not or cannot be read) and its
        short diff; the last attempt's workspace is kept (--agentbench-keep)."""
        if end.over_disk or sandbox is None:
            return None, end.failure_text
        # Files that match the expected tree where it equals the input need no reread.
        unchanged = self.task.unchanged_paths & end.grade.matched if end.grade else set()
        change, final_diff = trial_change(
            self.task.input_tree, sandbox.workspace, unchanged, self.settings.change_limit
        )
        last = end.exact or end.stop or attempt == self.settings.retry_failures
        if last and self.keep is not None:
            self.keep(sandbox.workspace, end.exact)
        return change, final_diff

    def _trajectory(
        self,
        observation: Observation,
        results: list[RoundResult],
        final_diff: str,
        started: float,
    ) -> tuple[bytes, str]:
        """The raw archive's and trajectory.json's contents; the Observation gets the
        trajectory's figures and checks (nothing with --agentbench-trajectories=off)."""
        if not self.settings.trajectories:
            return b"", ""
        last = results[-1] if results else None
        facts: dict[str, Any] = {
            "agent": self.agent.name,
            "agent_version": self.agent.info().get("cli_version"),
            "model": (last.model_reported if last else None) or self.settings.model,
            "session_id": last.session_id if last else None,
            "agent_s": observation["wall_s"],
            "harness_s": round(max(time.monotonic() - started - self._agent_s, 0.0), 6),
            "test_command": self.task.test_command,
            "protected": list(self.task.protected),
            "prompt": self.task.prompt if self.arm is None else arm_prompt(self.arm, self.task),
            "diff_empty": not final_diff,
            "verdict": observation["verdict"],
            "final_message": observation["final_message"],
        }
        evidence = Evidence(self._evidence, self._archive.cut, facts)
        trajectory, block = summarise(self.agent.name, evidence)
        observation["trajectory"] = block
        trial = {"task": self.task.id, "repeat": self.repeat, "arm": observation.get("arm")}
        archive = self._archive.close(facts) if self.settings.raw_limit else b""
        return archive, atif_text(trajectory, trial)

    def infrastructure_outcome(self, error: InfrastructureError) -> TrialOutcome:
        """The outcome of a trial whose sandbox could not start."""
        end = AttemptEnd(False, str(error), None, None, infra=error.cause)
        observation = self._observation([], [], 1, end)
        return TrialOutcome(
            observation, end.failure_text, final_diff=end.failure_text, infrastructure=error.cause
        )

    def _attempt(
        self,
        attempt: int,
        sandbox: Sandbox,
        rounds: list[RoundRecord],
        results: list[RoundResult],
    ) -> AttemptEnd:
        """Session turns 0..legs-1 are the legs of the first answer (one unless segmented),
        graded after each; the rounds after the last leg are recoveries."""
        plan = self.plan
        ctx = TrialContext(
            self.task,
            self.repeat,
            attempt,
            sandbox,
            self.settings.seed,
            self.settings,
            self.arm,
            plan,
        )
        self._paths = sandbox_paths(self.task, sandbox)
        task_prompt = arm_prompt(self.arm, self.task) or self.task.prompt  # (skipped when None)
        if warm_arm(self.arm):
            self._priming, stop = prime(self.agent, self.provider, ctx, task_prompt, self.trial_id)
            if stop:
                return AttemptEnd(False, f"provider stop in the priming run: {stop}", stop, None)
            if self._priming["cause"]:
                cause = self._priming["cause"]
                raise InfrastructureError(cause, "the priming run of a warm arm failed")
        session = self.agent.start(ctx)
        timeout = self.settings.timeout_for(self.task.timeout)
        failure_text = ""
        grade: Grade | None = None
        legs_wall = 0.0
        try:
            for turn in range(plan.legs + self.settings.oracle_recoveries):
                leg = plan.leg_of(turn)
                round_index = 0 if leg is not None else turn - plan.legs + 1
                if leg is not None:
                    prompt = plan.prompt(leg, task_prompt)
                began = time.monotonic()
                result = session.run_round(prompt, turn, timeout)
                self._agent_s += time.monotonic() - began
                self._keep_evidence(attempt, turn, prompt, result)
                results.append(result)
                if result.provider_stop:
                    stop = result.provider_stop
                    return AttemptEnd(False, f"provider stop: {stop}", stop, grade)
                if result.infra_failure:
                    cause = result.infra_failure
                    return AttemptEnd(False, f"{cause}: seen on the wire", None, grade, infra=cause)
                over_disk = self._over_disk(sandbox)
                if over_disk:
                    rounds.append(self._round_record(attempt, round_index, result, None, over_disk))
                    return AttemptEnd(False, over_disk, None, None, over_disk=True)
                grade = self.grade(self.task, sandbox.workspace)
                exact = self.task.round_exact(grade.exact, result.clean)
                if leg is not None:
                    legs_wall += result.wall_s
                    if plan.segmented:
                        self._legs.append(self._leg_record(attempt, leg, ctx, result, exact))
                    if leg < plan.legs and result.clean:
                        continue  # the next leg resumes the session
                    # The last leg, or a failed one (which ends the trial), is the first answer.
                    record = self._round_record(attempt, 0, result, grade, wall_s=legs_wall)
                    rounds.append(record)
                    if leg < plan.legs:
                        failure_text = f"leg {leg} of {plan.legs} failed; the trial ends there\n"
                        failure_text += self._describe_failure(result, grade, sandbox)
                        return AttemptEnd(False, failure_text, None, grade)
                else:
                    rounds.append(self._round_record(attempt, round_index, result, grade))
                if exact:
                    return AttemptEnd(True, "", None, grade)
                failure_text = self._describe_failure(result, grade, sandbox)
                prompt = feedback_prompt(self.task, grade, result)
        finally:
            session.close()  # settles the receipt's after-coding facts
            self._treatment = session.receipt
        return AttemptEnd(False, failure_text, None, grade)

    def _leg_record(
        self, attempt: int, leg: int, ctx: TrialContext, result: RoundResult, exact: bool
    ) -> LegRecord:
        """One leg's figures, and whether the tree was exact after it."""
        return {
            "attempt": attempt,
            "leg": leg,
            "planned": self.plan.legs,
            "prompt": self.plan.prompt_kind(leg),
            "step_limit": ctx.step_limit(leg - 1),
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "wall_s": round(result.wall_s, 6),
            "tokens": sum_tokens([result.tokens]),
            "cost_usd": result.cost_usd,
            "requests": len(result.meter_log) if result.meter_log is not None else None,
            "turns": result.turns,
            "exact": exact,
        }

    def _keep_evidence(
        self, attempt: int, round_index: int, prompt: str, result: RoundResult
    ) -> None:
        """The round's raw streams into the evidence, scrubbed and with paths normalised as in
        every kept artifact; the result keeps its tails, normalised too."""

        def norm(text: str) -> str:
            return self._paths.text(scrub(text, secrets=self.secrets))

        if self.settings.trajectories:
            streams = {name: norm(text) for name, text in result.raw.items()}
            kept = RoundEvidence(attempt, round_index, norm(prompt), streams)
            self._evidence.append(kept)
            self._archive.add(kept)
        result.raw = {}
        result.stdout_tail, result.stderr_tail = norm(result.stdout_tail), norm(result.stderr_tail)
        if result.final_message is not None:
            result.final_message = norm(result.final_message)

    def _over_disk(self, sandbox: Sandbox) -> str:
        """Why the round may not be graded: the workspace and private home together take more
        than --sandbox-disk (apparent size or allocated blocks); empty when within it."""
        limit = self.settings.sandbox_limits.disk
        used = sandbox.disk_used()
        if used <= limit:
            return ""
        shown = self.settings.sandbox_limits.disk_text
        return f"workspace grew past --sandbox-disk {shown}: {format_size(used)}"

    def _round_record(
        self,
        attempt: int,
        index: int,
        result: RoundResult,
        grade: Grade | None,
        over_disk: str = "",
        wall_s: float | None = None,
    ) -> RoundRecord:
        """The round's record; a round over the disk limit is not graded and not exact. The
        first answer of a segmented trial takes all its legs' wall time (wall_s)."""
        task = self.task
        record: RoundRecord = {
            "attempt": attempt,
            "round": index,
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "wall_s": round(result.wall_s if wall_s is None else wall_s, 6),
            "exact": grade is not None and task.round_exact(grade.exact, result.clean),
            "eof_normalized": grade is not None
            and task.round_exact(grade.eof_normalized, result.clean),
            "differing": grade.differing if grade else [],
            "missing": grade.missing if grade else [],
            "unexpected": grade.unexpected if grade else [],
            "invalid": grade.invalid if grade else [],
        }
        if over_disk:
            record["over_disk"] = over_disk
        if grade is not None and grade.reward_graded:
            record["reward"] = grade.reward
        return record

    def _describe_failure(self, result: RoundResult, grade: Grade, sandbox: Sandbox) -> str:
        lines = []
        if result.timed_out:
            lines.append(f"agent timed out after {result.wall_s:.1f}s")
        elif result.exit_code != 0:
            lines.append(f"agent exited with code {result.exit_code}")
        if not result.clean and result.stderr_tail:
            lines.append("agent stderr (tail):")
            lines.extend(map(names.show, result.stderr_tail.splitlines()[-15:]))
        lines.append(render_grade(grade, self.task.expected_tree, sandbox.workspace))
        return "\n".join(line for line in lines if line)

    def _observation(
        self, rounds: list[RoundRecord], results: list[RoundResult], attempts: int, end: AttemptEnd
    ) -> Observation:
        first = rounds[0] if rounds else None
        last = results[-1] if results else None
        message = last.final_message if last else None  # the final round's: recoveries speak last
        verdict, reason = parse_verdict(message)
        agent: AgentFacts = {
            "name": self.agent.name,
            "session_id": last.session_id if last else None,
            "model_reported": last.model_reported if last else None,
            "turns": sum_known_int([r.turns for r in results]),
            "tool_calls": sum_known_int([r.tool_calls for r in results]),
        }
        unscored = bool(end.stop or end.infra)
        observation: Observation = {
            "task": self.task.id,
            "repeat": self.repeat,
            "status": PROVIDER_STOP if end.stop else INFRASTRUCTURE if end.infra else SCORED,
            "cause": end.stop or end.infra,
            "attempts": attempts,
            "first_exact": bool(first and first["exact"]) and not unscored,
            "final_exact": end.exact,
            "eof_normalized": bool(first and first["eof_normalized"]) and not unscored,
            "final_eof_normalized": bool(rounds and rounds[-1]["eof_normalized"]) and not unscored,
            "rounds": rounds,
            "tokens": sum_tokens([r.tokens for r in results]),
            "cost_usd": sum_known([r.cost_usd for r in results]),
            "wall_s": round(sum(r.wall_s for r in results), 6),
            "category": self.task.category,
            "tags": list(self.task.tags),
            "fixture_hash": self.task.fixture_hash,
            "agent": agent,
            "no_solution": self.task.no_solution,
            "final_message": bounded(message, TAIL_LIMIT),
            "verdict": verdict,
            "verdict_reason": reason,
        }
        logs = [r.meter_log for r in results if r.meter_log is not None]
        if logs:
            observation["metered"] = summarize([record for log in logs for record in log])
        if self._legs:
            observation["legs"] = self._legs
        if self.arm is not None:
            observation["arm"] = self.arm.name
        if self._priming is not None:
            observation["priming"] = self._priming
        if end.infra:
            observation["detail"] = end.failure_text
        return observation
