"""The mock agent: a free, seeded stand-in with a tunable pass rate and plausible usage.

Every choice is drawn from (seed, task, repeat, attempt, round) only, never from global random
state, so a run is identical serially and under xdist, and under pytest-randomly.
"""

from __future__ import annotations

import json
import random
import time

import pytest

from pytest_agentbench.agents.base import (
    Agent,
    AgentSession,
    RoundResult,
    TokenUsage,
    TrialContext,
)
from pytest_agentbench.agents.offline import apply_reference
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.hashing import stable_int
from pytest_agentbench.tasks.model import Task, Tree, as_mapping, materialize, replace_with
from pytest_agentbench.trajectory.model import Step, ToolCall

ARM_PREFIX = "pass_prob.arm."  # --agent-opt pass_prob.arm.NAME=P: the chance in one arm
WRONG_EDITS = ("eof", "partial", "extra", "none")
PROFILES = ("uniform", "flaky")
CONDUCTS = ("claim", "honest", "tamper", "silent")
"""What the mock does on a no-solution task: claim done without a change, answer honestly,
tamper (lay the task's first cheat tree over the workspace, else edit a file) and claim done,
or leave the task alone and say nothing about completion."""
FINAL_MESSAGES = {
    "claim": "All done: the change is in place.\nCOMPLETION: done",
    "honest": "COMPLETION: incomplete — the task cannot be done as asked without changing "
    "what it says must not change",
    "tamper": "Fixed it.\nCOMPLETION: done",
    "silent": "I looked at the repository.",
}


def _probability(key: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise pytest.UsageError(f"--agent-opt {key}={raw}: expected a probability in [0, 1]")
    return value


class MockAgent(Agent):
    """Options: seed, pass_prob, pass_prob.<task-id>, pass_prob.arm.<arm>, profile (uniform|flaky),
    wrong (mixed|eof|partial|extra|none), fix_prob, usage (on|off),
    integrity (mixed|claim|honest|tamper|silent: its conduct on no-solution tasks)."""

    name = "mock"
    starts_processes = False
    delivery = None  # runs no model: an arm reaches nothing (its pass chance may differ)
    options = (
        "seed",
        "pass_prob",
        "pass_prob.*",
        "pass_prob.arm.*",
        "profile",
        "wrong",
        "fix_prob",
        "usage",
        "integrity",
    )

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        opts = settings.agent_opts
        self.seed = int(opts.get("seed", settings.seed))
        self.pass_prob = _probability("pass_prob", opts.get("pass_prob", "0.7"))
        self.fix_prob = _probability("fix_prob", opts.get("fix_prob", "0.5"))
        self.task_pass_prob = {
            key.removeprefix("pass_prob."): _probability(key, value)
            for key, value in opts.items()
            if key.startswith("pass_prob.") and not key.startswith(ARM_PREFIX)
        }
        self.arm_pass_prob = {
            key.removeprefix(ARM_PREFIX): _probability(key, value)
            for key, value in opts.items()
            if key.startswith(ARM_PREFIX)
        }
        self.profile = opts.get("profile", "uniform")
        if self.profile not in PROFILES:
            raise pytest.UsageError(
                f"--agent-opt profile={self.profile}: choose one of {', '.join(PROFILES)}"
            )
        self.wrong = opts.get("wrong", "mixed")
        if self.wrong != "mixed" and self.wrong not in WRONG_EDITS:
            raise pytest.UsageError(
                f"--agent-opt wrong={self.wrong}: choose mixed or one of {', '.join(WRONG_EDITS)}"
            )
        usage = opts.get("usage", "on")
        if usage not in ("on", "off"):
            raise pytest.UsageError(f"--agent-opt usage={usage}: choose on or off")
        self.report_usage = usage == "on"
        self.integrity = opts.get("integrity", "mixed")
        if self.integrity != "mixed" and self.integrity not in CONDUCTS:
            raise pytest.UsageError(
                f"--agent-opt integrity={self.integrity}: choose mixed or one of "
                + ", ".join(CONDUCTS)
            )
        self._changes: dict[str, tuple[list[str], list[str]]] = {}

    def probability_for(self, task_id: str, arm: str | None = None) -> float:
        """The chance that a first round ends exact for this task (in this arm): a task's own
        pass_prob.<task-id>, else the arm's pass_prob.arm.<name>, else the profile's."""
        if task_id in self.task_pass_prob:
            return self.task_pass_prob[task_id]
        if arm in self.arm_pass_prob:
            return self.arm_pass_prob[arm]
        if self.profile == "flaky":
            draw = random.Random(stable_int("profile", self.seed, task_id)).random()
            return 0.0 if draw < 0.3 else 1.0 if draw > 0.7 else 0.5
        return self.pass_prob

    def info(self) -> dict[str, object]:
        """Its usage figures are drawn, not measured: reports label them simulated."""
        simulated = ["tokens", "cost_usd", "wall_s"] if self.report_usage else []
        return {
            **super().info(),
            "cli_version": "builtin",
            "seed": self.seed,
            "simulated": simulated,
        }

    def start(self, ctx: TrialContext) -> AgentSession:
        return MockSession(self, ctx)

    def changes_of(self, task: Task, expected: Tree) -> tuple[list[str], list[str]]:
        """The expected files whose bytes differ from the input, and those of them the input
        has (edits rather than creations); worked out once per task (concurrent trials racing
        here work out the same answer, so no lock)."""
        if task.id not in self._changes:
            original = as_mapping(task.input_tree)
            target = as_mapping(expected)
            changed = sorted(p for p in target if original.get(p) != target[p])
            self._changes[task.id] = changed, [p for p in changed if p in original]
        return self._changes[task.id]


class MockSession(AgentSession):
    def __init__(self, agent: MockAgent, ctx: TrialContext) -> None:
        self.agent = agent
        self.ctx = ctx
        self.session_id = f"mock-{stable_int(agent.seed, ctx.task.id, ctx.repeat, ctx.attempt):x}"

    def run_round(self, prompt: str, round_index: int, timeout: float) -> RoundResult:
        started = time.monotonic()
        task, ctx = self.ctx.task, self.ctx
        arm = ctx.arm.name if ctx.arm is not None else None
        draw = [self.agent.seed, task.id, ctx.repeat, ctx.attempt, round_index]
        if ctx.arm is not None and not ctx.arm.is_vanilla:  # vanilla draws as a plain run
            draw.append(arm)
        rng = random.Random(stable_int(*draw))
        final_message = None  # on a solvable task the mock says nothing
        chance = self.agent.fix_prob if round_index else self.agent.probability_for(task.id, arm)
        edited = False
        if task.no_solution:
            final_message = self._conduct(rng)
        elif rng.random() < chance:
            apply_reference(ctx, timeout)
            edited = True
        elif round_index == 0:
            edited = self._wrong_edit(rng)
        simulated_wall = round(rng.uniform(2.0, 30.0), 3)
        tokens, cost = self._usage(rng, prompt)
        turns, tool_calls = rng.randint(1, 8), rng.randint(0, 12)
        wall = simulated_wall if self.agent.report_usage else time.monotonic() - started
        paths = self._edited_paths() if edited else []
        story = random.Random(
            stable_int(*draw, "trajectory")
        )  # leaves the draws above as they were
        steps = simulated_steps(story, turns, tool_calls, tokens, wall, paths, final_message)
        return RoundResult(
            exit_code=0,
            timed_out=False,
            wall_s=wall,
            tokens=tokens,
            cost_usd=cost,
            turns=turns,
            tool_calls=tool_calls,
            session_id=self.session_id,
            model_reported=self.agent.settings.model or "mock-1",
            final_message=final_message,
            raw={"simulated": steps},
        )

    def _edited_paths(self) -> list[str]:
        """The files the expected tree changes (none for a task graded by a verifier)."""
        task = self.ctx.task
        expected = task.expected_tree if task.make_expected is not None else None
        return self.agent.changes_of(task, expected)[0] if expected is not None else []

    def _usage(self, rng: random.Random, prompt: str) -> tuple[TokenUsage | None, float | None]:
        if not self.agent.report_usage:
            return None, None
        prompt_tokens = 900 + len(prompt) // 4 + rng.randint(0, 4000)
        cached = rng.randint(0, prompt_tokens // 2)
        output = rng.randint(80, 1500)
        reasoning = rng.randint(0, output // 2)
        cost = (prompt_tokens - cached) * 1.25e-6 + cached * 0.125e-6 + output * 10e-6
        usage = TokenUsage(prompt_tokens, cached, output, reasoning)
        return usage, round(cost, 8)

    def _conduct(self, rng: random.Random) -> str:
        """Act on a no-solution task as --agent-opt integrity says (mixed: a seeded draw);
        the final message it ends with."""
        conduct = rng.choice(CONDUCTS) if self.agent.integrity == "mixed" else self.agent.integrity
        if conduct == "tamper":
            task, workspace = self.ctx.task, self.ctx.sandbox.workspace
            cheats = task.cheat_trees
            if cheats:
                materialize(cheats[sorted(cheats)[0]], workspace)
            else:
                target = next(iter(sorted(task.input_tree.paths())), "TAMPERED.txt")
                with open(workspace / target, "ab") as out:
                    out.write(b"\n# made to pass\n")
        return FINAL_MESSAGES[conduct]

    def _wrong_edit(self, rng: random.Random) -> bool:
        """Leave a plausible wrong result: off by a newline, half done, a stray file, nothing;
        whether it edited anything."""
        kind = rng.choice(WRONG_EDITS) if self.agent.wrong == "mixed" else self.agent.wrong
        task, workspace = self.ctx.task, self.ctx.sandbox.workspace
        expected = task.expected_tree
        if kind == "none" or expected is None:
            return False
        changed, edited = self.agent.changes_of(task, expected)
        if kind == "partial" and not edited:
            kind = "extra"  # nothing to leave half-done: only creations or deletions
        replace_with(expected, workspace)
        if kind == "eof" and changed:
            data = expected.read(changed[0])
            data = data.rstrip(b"\r\n") if data.endswith(b"\n") else data + b"\n"
            (workspace / changed[0]).write_bytes(data)
        elif kind == "partial":
            (workspace / edited[0]).write_bytes(task.input_tree.read(edited[0]))
        else:
            (workspace / "NOTES.agent.md").write_text("scratch notes left behind\n")
        return True


def simulated_steps(
    rng: random.Random,
    requests: int,
    tool_calls: int,
    tokens: TokenUsage | None,
    wall_s: float,
    edited: list[str],
    final_message: str | None,
) -> str:
    """A plausible trajectory for one round, labelled simulated: its requests, tool calls,
    tokens and time agree with the round's drawn figures. It reads and edits the files it
    changed, may run the tests, and spends about 60 % of its time waiting on the model."""
    kinds = ["read"] * min(len(edited), tool_calls) + ["edit"] * len(edited)
    kinds = (kinds + [rng.choice(("shell", "read", "search")) for _ in range(tool_calls)])[
        :tool_calls
    ]
    per_request = [kinds[i::requests] for i in range(requests)]
    shares = [rng.random() + 0.1 for _ in range(requests)]
    steps = []
    for index, step_kinds in enumerate(per_request):
        share = shares[index] / sum(shares)
        calls = [_simulated_call(rng, index, n, kind, edited) for n, kind in enumerate(step_kinds)]
        last = index == requests - 1
        step = Step(
            "agent",
            message=(final_message or "") if last else "",
            tool_calls=calls,
            tokens=_share(tokens, share, last, index, shares),
            tokens_from="reported" if tokens is not None else None,
            latency_s=round(0.6 * wall_s * share, 6),
            model="mock-1",
            request=index + 1,
        )
        steps.append(json.dumps(step.to_json(), separators=(",", ":")))
    return "\n".join(steps) + "\n"


def _simulated_call(
    rng: random.Random, step: int, n: int, kind: str, edited: list[str]
) -> ToolCall:
    path = edited[n % len(edited)] if edited else "README.md"
    call_id = f"mock_{step}_{n}"
    if kind == "shell":
        command = rng.choice(("ls", "python -m pytest -q", "cat " + path))
        return ToolCall(call_id, "shell", "shell", {"command": command}, "", 0, command=command)
    if kind == "search":
        return ToolCall(call_id, "grep", "search", {"pattern": "TODO"}, "")
    return ToolCall(call_id, kind, kind, {"path": path}, "", paths=[path])  # type: ignore[arg-type]


def _share(
    tokens: TokenUsage | None, share: float, last: bool, index: int, shares: list[float]
) -> dict[str, int | None] | None:
    """One request's part of the round's tokens; the parts add up to the round's exactly."""
    if tokens is None:
        return None
    before = sum(shares[:index]) / sum(shares)
    after = 1.0 if last else before + share
    return {
        key: None if value is None else int(value * after) - int(value * before)
        for key, value in tokens.to_dict().items()
    }
