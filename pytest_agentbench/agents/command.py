"""The command agent: any shell command, run in the workspace with the prompt in a file."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from pytest_agentbench.agents.base import (
    Agent,
    AgentSession,
    RoundResult,
    TokenUsage,
    TrialContext,
)
from pytest_agentbench.agents.command_line import resolve_command
from pytest_agentbench.agents.delivery import Places
from pytest_agentbench.sandbox.base import SandboxProvider
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.files import make_dirs, write_file
from pytest_agentbench.tasks.verdict import MESSAGE_LIMIT, bounded

STDERR_TAIL = 4000
TRAJECTORY_FILE_LIMIT = 64 << 20  # bytes of AGENTBENCH_TRAJECTORY_FILE read (ATIF or JSONL)
BASE_ENV = ("PATH", "LANG", "LC_ALL", "TERM", "TZ")
GUIDANCE_FILE = "guidance.md"  # an arm's guidance, in the private home
SKILLS_DIR = "skills"  # an arm's skills, in the private home
PLUGINS_DIR = "plugins"  # an arm's plugins, each plugins/<name>/, in the private home


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_usage_file(path: Path | str) -> tuple[TokenUsage | None, float | None]:
    """Usage a command may report in AGENTBENCH_USAGE_FILE; absent fields stay unknown."""
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read())
    except (OSError, ValueError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    tokens = TokenUsage(
        input=_int_or_none(data.get("input")),
        cached_input=_int_or_none(data.get("cached_input")),
        output=_int_or_none(data.get("output")),
        reasoning=_int_or_none(data.get("reasoning")),
        cache_write=_int_or_none(data.get("cache_write")),
    )
    cost = data.get("cost_usd")
    known_cost = (
        float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    )
    has_tokens = any(value is not None for value in tokens.to_dict().values())
    return (tokens if has_tokens else None), known_cost


def read_agent_file(path: Path | str, limit: int, *, end: bool = False) -> bytes | None:
    """At most limit bytes of a file the agent wrote (its end when end is set); None when it
    wrote no regular file there.

    Never follows a symlink nor waits on a FIFO: the file lies where the agent writes.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        want = min(info.st_size, limit)
        return os.pread(fd, want, info.st_size - want if end else 0)
    finally:
        os.close(fd)


def read_report_file(path: Path) -> str | None:
    """The end of the final message a command may write to AGENTBENCH_REPORT_FILE (at most
    MESSAGE_LIMIT characters, read without the rest); None when it wrote none."""
    # UTF-8 takes at most 4 bytes a character
    data = read_agent_file(path, 4 * MESSAGE_LIMIT, end=True)
    return None if data is None else bounded(data.decode("utf-8", "replace"))


class CommandAgent(Agent):
    """Runs --agent-cmd through /bin/sh with cwd = workspace.

    The programs and scripts the command names resolve from the directory pytest was started
    in, and the sandbox shows them read-only (command_line.py). The child gets a small
    environment (PATH, locale, a private HOME and TMPDIR, the AGENTBENCH_* variables) plus the
    variables named by --agent-opt env=NAME,NAME: the operator's other variables do not reach it.
    """

    name = "command"
    options = ("env",)
    # Named to the command by AGENTBENCH_GUIDANCE_FILE, _SKILLS_DIR and _PLUGINS_DIR.
    delivery = Places(GUIDANCE_FILE, SKILLS_DIR, f"{PLUGINS_DIR}/{{name}}")

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        if not settings.agent_cmd:
            raise pytest.UsageError(
                "--agent=command needs --agent-cmd 'COMMAND' (run through /bin/sh in the workspace)"
            )
        self.command = settings.agent_cmd
        self.missing: list[str] = []
        self.unresolved: list[str] = []
        self.python_path: list[str] = []
        self.passthrough = [n for n in (settings.agent_opts.get("env") or "").split(",") if n]

    def use_sandbox(self, provider: SandboxProvider) -> None:
        """Resolve the command's programs and scripts, and have the provider show them. Under
        docker a bare program name is the image's; files the command names are mounted."""
        super().use_sandbox(provider)
        resolved = resolve_command(
            self.settings.agent_cmd or "",
            Path.cwd(),
            dict(os.environ),
            host_programs=provider.kind != "docker",
            hidden=provider.program_hidden(),
        )
        self.command = resolved.text
        self.missing = resolved.missing
        self.unresolved = resolved.unresolved
        self.python_path = resolved.python_path
        provider.expose(resolved.exposures, f"--agent-cmd {self.settings.agent_cmd!r}")

    def preflight(self) -> None:
        """A program or script the command names that does not exist fails every trial the
        same way (exit 127, or the interpreter's "can't open"): say so once, before any trial.
        A relative path not found where pytest was started may be the workspace's own: it is
        missing only when no task's input tree holds it either."""
        super().preflight()
        if self.missing:
            raise pytest.UsageError(
                f"--agent-cmd {self.settings.agent_cmd!r}: command not found: {self.missing[0]} "
                "(not on PATH); install it, or name it by its path"
            )
        absent = [path for path in self.unresolved if not in_some_input_tree(self.settings, path)]
        if absent:
            raise pytest.UsageError(
                f"--agent-cmd {self.settings.agent_cmd!r}: {absent[0]} not found, neither in "
                f"{Path.cwd()} (where pytest was started) nor in any task's input tree; "
                "correct the path, or start pytest where it resolves"
            )

    def info(self) -> dict[str, object]:
        resolved = self.command if self.command != self.settings.agent_cmd else None
        return {
            **super().info(),
            "cli_version": None,
            "command": self.settings.agent_cmd,
            "command_resolved": resolved,
        }

    def start(self, ctx: TrialContext) -> AgentSession:
        return CommandSession(self, ctx)


def in_some_input_tree(settings: Settings, path: str) -> bool:
    """Whether some task of the run has `path` (relative to its workspace) in its input tree.
    Loads the tasks, which only a command naming a path not found from here asks for."""
    from pytest_agentbench.suites.catalog import iter_catalog

    wanted = os.path.normpath(path)
    for entry in iter_catalog(settings.tasks, Path.cwd()):
        if entry.task is not None and wanted in entry.task.input_tree.paths():
            return True
    return False


class CommandSession(AgentSession):
    def __init__(self, agent: CommandAgent, ctx: TrialContext) -> None:
        self.agent = agent
        self.ctx = ctx
        if ctx.arm is not None:
            agent.deliver(ctx.arm, ctx.sandbox.home)

    def _env(self, round_index: int) -> dict[str, str]:
        sandbox = self.ctx.sandbox
        env = {name: os.environ[name] for name in BASE_ENV if name in os.environ}
        env.update(
            {name: os.environ[name] for name in self.agent.passthrough if name in os.environ}
        )
        env.update(
            HOME=sandbox.inner_home,
            TMPDIR=f"{sandbox.inner_home}/tmp",
            AGENTBENCH_TASK=self.ctx.task.id,
            AGENTBENCH_REPEAT=str(self.ctx.repeat),
            AGENTBENCH_ATTEMPT=str(self.ctx.attempt),
            AGENTBENCH_ROUND=str(round_index),
            AGENTBENCH_WORKSPACE=sandbox.inner_workspace,
            AGENTBENCH_PROMPT_FILE=f"{sandbox.inner_home}/prompt-{round_index}.txt",
            AGENTBENCH_USAGE_FILE=f"{sandbox.inner_home}/usage-{round_index}.json",
            AGENTBENCH_REPORT_FILE=f"{sandbox.inner_home}/report-{round_index}.txt",
            AGENTBENCH_TRAJECTORY_FILE=f"{sandbox.inner_home}/trajectory-{round_index}.json",
        )
        leg = self.ctx.plan.leg_of(round_index)
        if leg is not None:
            env["AGENTBENCH_LEG"] = str(leg)
        else:
            env["AGENTBENCH_FEEDBACK_FILE"] = env["AGENTBENCH_PROMPT_FILE"]
        if self.ctx.priming:  # a warm arm's priming run: one step is enough
            env["AGENTBENCH_PRIMING"] = "1"
        if self.agent.python_path:  # `python -m NAME` finds NAME where pytest was started
            given = [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []
            env["PYTHONPATH"] = os.pathsep.join([*self.agent.python_path, *given])
        arm = self.ctx.arm
        if arm is not None and arm.guidance is not None:
            env["AGENTBENCH_GUIDANCE_FILE"] = f"{sandbox.inner_home}/{GUIDANCE_FILE}"
        if arm is not None and arm.skills:
            env["AGENTBENCH_SKILLS_DIR"] = f"{sandbox.inner_home}/{SKILLS_DIR}"
        if arm is not None and arm.plugins:
            env["AGENTBENCH_PLUGINS_DIR"] = f"{sandbox.inner_home}/{PLUGINS_DIR}"
        return env

    def run_round(self, prompt: str, round_index: int, timeout: float) -> RoundResult:
        home = str(self.ctx.sandbox.home)
        make_dirs(home, ["tmp"])
        write_file(f"{home}/prompt-{round_index}.txt", prompt.encode())
        result = self.ctx.sandbox.run(
            ["/bin/sh", "-c", self.agent.command], env=self._env(round_index), timeout=timeout
        )
        tokens, cost = read_usage_file(f"{home}/usage-{round_index}.json")
        report = Path(home, f"report-{round_index}.txt")
        raw = {"stdout": result.stdout.decode("utf-8", "replace")}
        steps = read_agent_file(f"{home}/trajectory-{round_index}.json", TRAJECTORY_FILE_LIMIT)
        if steps is not None:
            raw["file"] = steps.decode("utf-8", "replace")
        return RoundResult(
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            wall_s=result.wall_s,
            tokens=tokens,
            cost_usd=cost,
            stdout_tail=result.stdout.decode("utf-8", "replace")[-STDERR_TAIL:],
            stderr_tail=result.stderr.decode("utf-8", "replace")[-STDERR_TAIL:],
            final_message=read_report_file(report),
            raw=raw,
        )
