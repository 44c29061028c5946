"""The Observation: what one trial measured, as one typed record every part reads and writes.

A TypedDict, not a class: the Observation travels on the test report as a plain,
JSON-round-tripped dict (xdist's serializer takes nothing else), is appended to
observations.jsonl and read back from it, so its shape is the JSON's shape. Fields added
after the first records were written are NotRequired: readers treat an absent one as unknown.
The producers are trial/rounds.py (a trial that ran), error_observation (one that could not) and
resume (a recorded one reused); the readers are metrics, store, reports and compare.
No postponed annotations here: on Python 3.11 TypedDict tells NotRequired fields apart only
from evaluated annotations.
"""

from typing import Literal, NotRequired, TypedDict

import pytest

from pytest_agentbench.tasks.model import Task
from pytest_agentbench.tasks.verdict import Verdict

REPORT_ATTRIBUTE = "agentbench"
"""The test report attribute that carries the Observation (a dict) to the controller."""

SCORED = "scored"
PROVIDER_STOP = "provider_stop"
INFRASTRUCTURE = "infrastructure"
ERROR = "error"
BREAKER_OPEN = "breaker_open"  # not started: the circuit breaker stopped the run (breaker.py)
INTERRUPTED = "interrupted"  # not started: a signal stopped the run (run/stop.py)

Outcome = Literal["first_exact", "final_exact", "eof_normalized"]
"""The per-trial verdicts rates are made of."""


class Metered(TypedDict):
    """A trial's requests as the meter counted them. tokens: every answered (2xx) model
    request, side requests included; side_tokens: the part spent on the side_requests, answered
    requests that carried no tools (titles, summaries); None when nothing was counted or a
    field went unreported."""

    requests: int
    statuses: dict[str, int]
    tokens: dict[str, int | None] | None
    side_requests: int
    side_tokens: dict[str, int | None] | None
    faults: int  # injected by --agentbench-faults
    retried_after_fault: bool | None  # another request followed a fault; None: no fault


class Tokens(TypedDict):
    """Token totals of a trial; a field any round did not report is None for the trial."""

    input: int | None
    cached_input: int | None
    output: int | None
    reasoning: int | None
    cache_write: NotRequired[int | None]  # part of input written to the cache; absent: unknown


class RoundRecord(TypedDict):
    """One graded round: execution facts and the grade's paths (never expected bytes)."""

    attempt: int
    round: int
    exit_code: int | None
    timed_out: bool
    wall_s: float
    exact: bool
    eof_normalized: bool
    differing: list[str]
    missing: list[str]
    unexpected: list[str]
    invalid: list[str]
    # Set when the round was not graded: the workspace and home grew past --sandbox-disk.
    over_disk: NotRequired[str]
    # The verifier's reward, for a task graded by one (Harbor); None: it wrote no reward.
    reward: NotRequired[float | None]


class AttemptRecord(TypedDict):
    """One attempt of the trial (a fresh workspace and session; --retry-failures runs more):
    the agent's wall time over its rounds (None: no round ran), and whether its final workspace
    differs from the input tree (None: it could not be read)."""

    attempt: int
    wall_s: float | None
    changed: bool | None


class LegRecord(TypedDict):
    """One leg of a segmented trial (tasks/segments.py): what it was told (task, continuation
    or steer), its step share, figures and whether the tree was exact after it. requests: as
    the meter counted them (None unmetered); turns: the agent's own count."""

    attempt: int
    leg: int  # 1-based
    planned: int  # the trial's legs: a failed leg ends the trial before the last
    prompt: str
    step_limit: int | None
    exit_code: int | None
    timed_out: bool
    wall_s: float
    tokens: Tokens | None
    cost_usd: float | None
    requests: int | None
    turns: int | None
    exact: bool


class AgentFacts(TypedDict):
    """What the agent said about the trial's session."""

    name: str
    session_id: str | None
    model_reported: str | None
    turns: int | None
    tool_calls: int | None


class InfraRetry(TypedDict):
    """An attempt of the trial that ended in an infrastructure failure and was run again
    (--agentbench-retry-infra); its artifacts are in the trial directory's attempt-N/."""

    cause: str
    detail: str
    engine: NotRequired[str]  # the Docker engine of a pool it ran on (--docker-host)


class TranscriptChecks(TypedDict):
    """What the trajectory shows the agent did that the result alone cannot (trajectory.checks);
    forbidden_git is None when the prompt does not forbid git."""

    claimed_done_without_change: bool
    protected_writes: list[str]
    outside_workspace: list[str]
    forbidden_git: bool | None


class TrajectoryFigures(TypedDict):
    """The trial's figures from its trajectory (trajectory.figures); None where its origin
    cannot tell. tool_calls: by kind (shell, read, edit, search, other) and their total."""

    origin: str
    steps: int
    requests: int | None
    side_requests: int | None
    tool_calls: dict[str, int] | None
    verification_runs: int | None
    files_read: int | None
    files_written: int | None
    model_s: float | None
    tools_s: float | None
    harness_s: float
    checks: TranscriptChecks
    cut: bool  # the raw evidence was cut at --agentbench-raw-limit


class Priming(TypedDict):
    """A warm arm's priming run (trial/priming.py): one step of the same CLI and arm in a
    scratch workspace, before the trial. Its figures are its own, never the trial's. cause:
    why it failed (then the trial is an infrastructure failure or a provider stop), None when
    it primed; requests: the metered model requests, None when unmetered."""

    cause: str | None
    wall_s: float
    tokens: Tokens | None  # the CLI's own report
    cost_usd: float | None
    requests: int | None
    metered: NotRequired[Metered]


class Observation(TypedDict):
    """One trial (task x repeat). status: scored, provider_stop, infrastructure, error or
    another reason it was not scored (only scored counts); cause: the machine-readable cause of
    a provider stop or an infrastructure failure, or why the trial did not run."""

    task: str
    repeat: int
    status: str
    cause: str | None
    attempts: int
    first_exact: bool
    final_exact: bool
    eof_normalized: bool
    rounds: list[RoundRecord]
    # The legs of a segmented trial, every attempt's (--agentbench-segments); absent: one leg.
    legs: NotRequired[list[LegRecord]]
    tokens: Tokens | None
    cost_usd: float | None
    wall_s: float | None
    # Every attempt in order, with its wall time; absent: recorded before attempts were kept.
    attempt_log: NotRequired[list[AttemptRecord]]
    trial_id: NotRequired[str]  # run id + task + repeat + attempt: the trial counts once
    nodeid: NotRequired[str]  # the pytest node id that ran it: pasted back, it reruns the trial
    final_eof_normalized: NotRequired[bool]  # the last graded round was EOF-normalized
    changed_lines: NotRequired[list[str] | None]  # digest of the final diff's +/- lines
    # The code measures asked of the trial's change (grading/measures.py's FIGURES) and their
    # ratios to the reference's; a figure that does not apply is None.
    measures: NotRequired[dict[str, int | float | None]]
    measure_notes: NotRequired[dict[str, str] | None]  # a measure -> why its figures are null
    # The task's reference change's figures (the denominators of the ratios); None: none.
    measure_reference: NotRequired[dict[str, int | None] | None]
    category: NotRequired[str]
    tags: NotRequired[list[str]]
    fixture_hash: NotRequired[str | None]
    agent: NotRequired[AgentFacts]
    reused: NotRequired[str]  # the run directory a resumed run took the record from
    # The run of another study the trial was reused from (a baseline, the cache): it was not
    # interleaved with this run's trials; kept in the run's record, unlike `reused`
    reused_from: NotRequired[str]
    no_solution: NotRequired[bool]  # the task has no reachable solution (scored on honesty)
    # The end (verdict.TAIL_LIMIT characters) of the final round's last message to the user,
    # and the completion verdict it gives (verdict.parse_verdict); None: none given.
    final_message: NotRequired[str | None]
    verdict: NotRequired[Verdict | None]
    verdict_reason: NotRequired[str | None]
    # What the metering proxy counted on the wire (--agentbench-meter); absent: not metered.
    metered: NotRequired[Metered]
    arm: NotRequired[str]  # the arm that ran it, in a run with --arms (absent otherwise)
    # With --arms: the skills in the trial's private home after it ran (the CLI's own too);
    # None for an agent without a skills folder.
    skills_found: NotRequired[list[str] | None]
    # With an arm that carries plugins: the plugins installed in the trial's private home
    # after it ran; None for an agent that installs none.
    plugins_found: NotRequired[list[str] | None]
    # What people read about an infrastructure failure (the cause alone decides).
    detail: NotRequired[str]
    # Earlier attempts of this trial that ended in an infrastructure failure, in order.
    infra_retries: NotRequired[list[InfraRetry]]
    # The Docker engine of a pool (--docker-host) the last attempt ran on.
    engine: NotRequired[str]
    # How the trial's last model call failed (meter.records.failed_call), set only when it also
    # left the workspace unchanged: the circuit breaker counts such trials.
    failed_call: NotRequired[str]
    # A warm arm's priming run, apart from the trial's figures; absent: the arm is cold.
    priming: NotRequired[Priming]
    # What the agent did, step by step, in figures (docs/trajectories.md); absent: recorded
    # before trajectories were kept, or the trial did not run.
    trajectory: NotRequired[TrajectoryFigures]


def slot_task(task_id: str, arm: str | None) -> str:
    """The task part of a trial's slot (task, repeat): in a run with arms, ARM::TASK, so that
    arms never share a slot in records, resume, trial ids and trial directories."""
    return f"{arm}::{task_id}" if arm else task_id


def observation_slot_task(observation: "Observation") -> str:
    """slot_task of a recorded trial."""
    return slot_task(observation["task"], observation.get("arm"))


OBSERVATION_KEY = pytest.StashKey[Observation]()
"""Where the trial's call leaves its Observation on the item, for the report to carry."""


def error_observation(
    task_id: str,
    repeat: int,
    message: str,
    status: str = ERROR,
    task: Task | None = None,
    arm: str | None = None,
) -> Observation:
    """An Observation for a trial that could not run (broken task, harness error) or was not
    started (a status of its own, such as budget_exhausted). With the task (when it loaded),
    it names the task's class and whether it has a solution."""
    observation: Observation = {
        "task": task_id,
        "repeat": repeat,
        "status": status,
        "cause": message,
        "attempts": 0,
        "first_exact": False,
        "final_exact": False,
        "eof_normalized": False,
        "rounds": [],
        "tokens": None,
        "cost_usd": None,
        "wall_s": None,
        "final_message": None,
        "verdict": None,
        "verdict_reason": None,
    }
    if arm is not None:
        observation["arm"] = arm
    if task is not None:
        observation["category"] = task.category
        observation["no_solution"] = task.no_solution
    return observation


def attached(report: object) -> Observation | None:
    """The Observation a test report carries, or None for reports of other tests."""
    observation: Observation | None = getattr(report, REPORT_ATTRIBUTE, None)
    return observation


def trial_tokens(observation: "Observation") -> float | None:
    """Total tokens of a trial (input incl. cached + output incl. reasoning), or None."""
    tokens = observation.get("tokens")
    if not tokens:
        return None
    given, produced = tokens.get("input"), tokens.get("output")
    return None if given is None or produced is None else float(given + produced)
