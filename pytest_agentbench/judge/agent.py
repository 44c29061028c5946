"""A judge's agent-CLI transport: Claude Code or Codex asked one question headless.

The CLI is found, isolated and read as its adapter does for `--agent` (agents/claude.py,
agents/codex.py): a private home, a scrubbed environment, its JSON output parsed by the
adapter. What differs is the question: no tools, no session kept, an empty working directory
of its own (it must not see the project or any workspace), the prompt on stdin and the system
text as the CLI takes one. Nothing goes through the meter: tokens and cost are what the CLI
reports, priced from the table when it gives no cost.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from pytest_agentbench.agents.claude import ClaudeAgent
from pytest_agentbench.agents.cli_base import (
    CliTrial,
    StreamFacts,
    events_argv,
    read_events,
    read_tail,
)
from pytest_agentbench.agents.codex import CodexAgent
from pytest_agentbench.agents.prices import Price
from pytest_agentbench.judge.asking import Answer, JudgeError
from pytest_agentbench.sandbox.base import (
    InfrastructureError,
    ProcessResult,
    make_trial_root,
    run_process_group,
)
from pytest_agentbench.settings import Settings
from pytest_agentbench.testing.clis import PINS, find_cli, missing_reason

DEFAULT_TIMEOUT = 300.0
TAIL_CHARS = 2000  # of the CLI's stderr and output, in a failure's message
ADAPTERS: dict[str, type[ClaudeAgent] | type[CodexAgent]] = {
    "claude": ClaudeAgent,
    "codex": CodexAgent,
}


def agent_asker(
    kind: str,
    model: str | None,
    base_url: str | None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    prices: Mapping[str, Price] | None = None,
) -> AgentAsker:
    """An Asker that runs the `kind` CLI (claude or codex) with model (None: the CLI's
    default) at base_url (None: the CLI's own provider). JudgeError when the CLI is not
    installed or no credential for it is set."""
    adapter = ADAPTERS.get(kind)
    if adapter is None:
        raise JudgeError(
            f"--judge-agent {kind!r}: no such agent CLI judge; use {' or '.join(ADAPTERS)}"
        )
    found = find_cli(kind)
    if found is None:
        raise JudgeError(f"--judge-agent {kind}: {missing_reason(kind)}")
    if not (found.is_file() and os.access(found, os.X_OK)):
        raise JudgeError(
            f"--judge-agent {kind}: {found} (from {PINS[kind].bin_env}) is no executable file; "
            f"point {PINS[kind].bin_env} at the {kind} binary, or unset it to use the pinned "
            "install"
        )
    options = {"base_url": base_url} if base_url else {}
    if kind == "codex":
        options["sandbox"] = "read-only"  # nothing to run or edit, were it to try
    cli = adapter(Settings(agent=kind, model=model, agent_opts=options, meter="off"), prices)
    names = tuple(dict.fromkeys(cli.credential_names()))
    if not any(os.environ.get(name) for name in names):
        raise JudgeError(
            f"--judge-agent {kind}: no credentials: set {' or '.join(names)} (the judge runs "
            "with a private home, where no login of the CLI's is)"
        )
    return AgentAsker(cli, timeout)


class AgentAsker:
    """Asks one agent CLI, a fresh process in a fresh directory per question."""

    def __init__(self, cli: ClaudeAgent | CodexAgent, timeout: float) -> None:
        self.cli = cli
        self.timeout = timeout
        self.name = f"agent:{cli.name}:{cli.settings.model or 'default'}"

    def ask(self, system: str, prompt: str) -> Answer:
        root = make_trial_root(f"judge-{self.cli.name}")
        try:
            return self._ask_in(root, system, prompt)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def _ask_in(self, root: Path, system: str, prompt: str) -> Answer:
        """Ask with root holding the CLI's home, its empty working directory, the prompt and
        the output, each a sibling of the others."""
        cli = self.cli
        home, workdir = root / "home", root / "workspace"
        home.mkdir()
        workdir.mkdir()
        prompt_file, events = root / "prompt.txt", root / "events.jsonl"
        prompt_file.write_text(prompt, encoding="utf-8")
        trial = CliTrial(home, str(home), cli.base_url)
        cli.prepare(trial)
        argv = events_argv(
            cli.name, cli.binary, cli.ask_command(system, trial), str(events), str(prompt_file)
        )
        try:
            result = run_process_group(
                argv, env=cli.child_env(trial), cwd=str(workdir), timeout=self.timeout
            )
        except InfrastructureError as error:
            raise JudgeError(f"{self.name}: {error}") from None
        facts = cli.parse(read_events(events))
        failure = self._failure(result, facts)
        if failure is not None:
            raise JudgeError(f"{self.name}: {cli.name} {failure}{self._tails(result, events)}")
        assert facts.final_message is not None  # else a failure
        tokens = facts.tokens
        return Answer(
            text=facts.final_message,
            input_tokens=tokens.input if tokens else None,
            output_tokens=tokens.output if tokens else None,
            cost_usd=cli.price(facts, tokens),
        )

    def _failure(self, result: ProcessResult, facts: StreamFacts) -> str | None:
        if result.timed_out:
            return f"timed out after {self.timeout:g} s"
        if result.exit_code != 0:
            return f"exited with code {result.exit_code}"
        if facts.final_message is None:
            return "exited with code 0 but gave no final message"
        return None

    def _tails(self, result: ProcessResult, events: Path) -> str:
        """The ends of the CLI's stderr and of its output (where Claude Code reports an API
        error), credentials scrubbed."""
        parts = []
        for label, data in (("stderr", result.stderr), ("output", read_tail(events, TAIL_CHARS))):
            text = self.cli.scrub(data.decode("utf-8", "replace")[-TAIL_CHARS:]).strip()
            if text:
                parts.append(f"\n{label}: {text}")
        return "".join(parts) or " (no stderr, no output)"
