"""Codex CLI adapter: `codex exec --json`, resumed with `codex exec resume`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.agents.base import TokenUsage
from pytest_agentbench.agents.cli_base import (
    CliAgent,
    CliTrial,
    StreamFacts,
    as_int,
    toml_value,
)
from pytest_agentbench.agents.delivery import Places
from pytest_agentbench.agents.plugins import CODEX_PLACE, codex_args
from pytest_agentbench.agents.prices import Price
from pytest_agentbench.sandbox.base import SandboxProvider
from pytest_agentbench.settings import Settings
from pytest_agentbench.testing.clis import native_codex

PROVIDER = "agentbench"
# What a question asked with ask_command turns off: every tool codex lets a config remove (it
# keeps request_user_input, which has no one to ask in exec mode).
NO_TOOLS: dict[str, str | bool] = {
    "features.shell_tool": False,
    "features.multi_agent": False,
    "features.goals": False,
    "features.view_image": False,
    "web_search": "disabled",
}
TOOL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "web_search"}


def overrides(values: Mapping[str, str | bool]) -> list[str]:
    """`-c key=value` arguments, each value as TOML (digits stay numbers)."""
    argv = []
    for key, value in values.items():
        if isinstance(value, bool):
            rendered = "true" if value else "false"
        else:
            rendered = value if value.isdigit() else toml_value(value)
        argv += ["-c", f"{key}={rendered}"]
    return argv


class CodexAgent(CliAgent):
    """OpenAI Codex CLI. CODEX_HOME is private; TMPDIR must not contain it (else codex skips
    its sandbox helper and every shell call fails)."""

    name = "codex"
    default_key_env = "OPENAI_API_KEY"
    default_provider = "api.openai.com"
    default_upstream = "https://api.openai.com/v1"
    cumulative_usage = True  # `exec resume` reports usage since the session began
    credential_env = ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID")
    key_variables = ("OPENAI_API_KEY", "CODEX_API_KEY")
    login_hint = "a `codex login` auth.json is not used: every trial has a private CODEX_HOME"
    own_options = ("sandbox", "retries")
    # Read from CODEX_HOME even with --ignore-user-config; no AGENTS.override.md is made.
    # Plugins in its install cache, enabled on the command line (agents/plugins.py).
    delivery = Places(".codex/AGENTS.md", ".codex/skills", CODEX_PLACE)

    def __init__(self, settings: Settings, prices: Mapping[str, Price] | None = None) -> None:
        super().__init__(settings, prices)
        self.sandbox_mode = self.option("sandbox") or "workspace-write"

    def _find_binary(self) -> str:
        return str(native_codex(Path(super()._find_binary())))

    def use_sandbox(self, provider: SandboxProvider) -> None:
        super().use_sandbox(provider)
        if not provider.nested_sandbox and not self.option("sandbox"):
            # codex's own sandbox needs namespaces; the harness's sandbox is the boundary here.
            self.sandbox_mode = "danger-full-access"

    def prepare(self, trial: CliTrial) -> None:
        trial.host(".codex").mkdir(exist_ok=True)

    def adapter_env(self, trial: CliTrial) -> dict[str, str]:
        return {"CODEX_HOME": trial.inner(".codex")}

    def config(self, trial: CliTrial) -> dict[str, str]:
        """`-c key=value` overrides: sandbox, effort, and the provider when base_url is set."""
        values = {"sandbox_mode": self.sandbox_mode}
        if self.settings.reasoning:
            values["model_reasoning_effort"] = self.settings.reasoning
        if trial.wire_url:  # a metered run reaches OpenAI through a custom provider too
            prefix = f"model_providers.{PROVIDER}"
            values.update(
                {
                    "model_provider": PROVIDER,
                    f"{prefix}.name": PROVIDER,
                    f"{prefix}.base_url": trial.wire_url,
                    f"{prefix}.env_key": self.key_env,
                    f"{prefix}.wire_api": "responses",
                }
            )
            retries = self.option("retries")
            if retries is not None:
                values[f"{prefix}.request_max_retries"] = retries
                values[f"{prefix}.stream_max_retries"] = retries
        return values

    def command(self, prompt: str, session_id: str | None, trial: CliTrial) -> list[str]:
        argv = ["exec", *(["resume"] if session_id else [])]
        argv += ["--json", "--skip-git-repo-check", "--ignore-user-config"]
        if self.settings.model:
            argv += ["-m", self.settings.model]
        argv += [*overrides(self.config(trial)), *codex_args(trial.plugins)]
        return [*argv, "--", *([session_id] if session_id else []), prompt]

    def ask_command(self, system: str, trial: CliTrial) -> list[str]:
        """argv after the binary that asks one question read from stdin, in the working
        directory, with no session kept, no tool it can drop, and `system` as developer
        instructions; the sandbox (`sandbox` option) should be read-only."""
        argv = ["exec", "--json", "--ephemeral", "--skip-git-repo-check", "--ignore-user-config"]
        if self.settings.model:
            argv += ["-m", self.settings.model]
        values: dict[str, str | bool] = {**self.config(trial), **NO_TOOLS}
        if system:
            values["developer_instructions"] = system
        return [*argv, *overrides(values), "-"]

    def parse(self, events: Sequence[Mapping[str, Any]]) -> StreamFacts:
        """codex's events carry no HTTP status (a failed turn has only a message): without the
        meter, no codex round is a provider stop. Its input_tokens count cached and
        cache-written tokens (cached_input_tokens, cache_write_input_tokens) in."""
        facts = StreamFacts(tool_calls=0)
        usage: dict[str, int] = {}
        reported: dict[str, int] = {}  # how many completed turns reported each field
        started = completed = 0
        for event in events:
            kind = event.get("type")
            if kind == "thread.started":
                facts.session_id = event.get("thread_id") or facts.session_id
            elif kind == "turn.started":
                started += 1
            elif kind == "turn.completed":
                completed += 1
                for key, value in (event.get("usage") or {}).items():
                    if as_int(value) is not None:
                        usage[key] = usage.get(key, 0) + value
                        reported[key] = reported.get(key, 0) + 1
            elif kind == "item.completed":
                item = event.get("item") or {}
                item_type = item.get("type")
                if item_type == "agent_message" and isinstance(item.get("text"), str):
                    facts.final_message = item["text"]  # the last one is the final answer
                if item_type in TOOL_ITEMS:
                    facts.tool_calls = (facts.tool_calls or 0) + 1
        # Usage arrives only with a completed turn: a failed or cut-off turn spent unknown tokens.
        if completed and completed == started:

            def known(key: str) -> int | None:  # a field some turn left out is unknown
                return usage[key] if reported.get(key) == completed else None

            facts.tokens = TokenUsage(
                input=known("input_tokens"),
                cached_input=known("cached_input_tokens"),
                output=known("output_tokens"),
                reasoning=known("reasoning_output_tokens"),
                cache_write=known("cache_write_input_tokens"),  # newer codex only
            )
        return facts
