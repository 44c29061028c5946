"""Codex CLI adapter: `codex exec --json`, resumed with `codex exec resume`."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.agents.base import TokenUsage
from pytest_agentbench.agents.cli_base import (
    DISCOVERY_END,
    CliAgent,
    CliTrial,
    StreamFacts,
    as_int,
    toml_value,
)
from pytest_agentbench.agents.delivery import Places
from pytest_agentbench.agents.plugins import CODEX_PLACE, codex_args, codex_enabled
from pytest_agentbench.agents.prices import Price
from pytest_agentbench.agents.receipts import Discovery, plugin_hook_name
from pytest_agentbench.sandbox.base import SandboxProvider
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.arms import Capabilities
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
# `codex app-server` answers JSON-RPC on stdin; listing skills, hooks and plugins starts no
# thread, so no model call. It lists no instruction file: guidance stays unverified until the
# first request on the wire shows it.
DISCOVERY_METHOD = "codex app-server JSON-RPC: initialize, skills/list, hooks/list, plugin/list"
CLIENT = "agentbench"
PLUGIN_SOURCE = "plugin"  # hooks/list's source of a plugin's hook
USER_AGENT = re.compile(rf"^{CLIENT}/(\S+)")  # initialize's userAgent: <client>/<codex version>


def capability_config(caps: Capabilities) -> dict[str, str | bool]:
    """The config that enforces the arms file's [capabilities]; nothing at the defaults."""
    if not caps.subagents:
        return {"agents.enabled": False, "features.multi_agent": False}
    if caps.max_threads is None:
        return {}
    threads = str(caps.max_threads)
    return {
        "agents.max_concurrent_threads_per_session": threads,
        "features.multi_agent_v2.max_concurrent_threads_per_session": threads,
    }


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
    capability_switches = {  # noqa: RUF012
        "subagents": "-c agents.enabled=false -c features.multi_agent=false",
        "max_threads": "-c agents.max_concurrent_threads_per_session=N "
        "(and features.multi_agent_v2's)",
    }
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

    def config(self, trial: CliTrial) -> dict[str, str | bool]:
        """`-c key=value` overrides: sandbox, effort, and the provider when base_url is set."""
        values: dict[str, str | bool] = {"sandbox_mode": self.sandbox_mode}
        values.update(capability_config(trial.capabilities))
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

    def discovery_requests(self, trial: CliTrial, workspace: str) -> tuple[list[str], str]:
        values = self.config(trial)
        where = {"cwds": [workspace]}
        lines: list[dict[str, Any]] = [
            {
                "id": "initialize",
                "method": "initialize",
                "params": {"clientInfo": {"name": CLIENT, "version": "1"}},
            },
            {"method": "initialized"},
            {"id": "skills", "method": "skills/list", "params": where},
            {"id": "hooks", "method": "hooks/list", "params": where},
            {"id": DISCOVERY_END, "method": "plugin/list", "params": {}},
        ]
        text = "".join(json.dumps({"jsonrpc": "2.0", **line}) + "\n" for line in lines)
        return ["app-server", *overrides(values), *codex_enabled(trial.plugins)], text

    def read_discovery(self, answers: Sequence[Mapping[str, Any]], trial: CliTrial) -> Discovery:
        return read_codex_discovery(answers, trial.inner_home)

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


def read_codex_discovery(answers: Sequence[Mapping[str, Any]], inner_home: str = "~") -> Discovery:
    """The receipt's facts from codex app-server's answers: user-scope skills are what an arm
    delivers, system ones (codex's .system skills) are recorded apart, as are repository ones;
    guidance is None (not listed)."""
    seen: dict[str, list[str] | None] = {"guidance": None, "skills": [], "plugin_skills": []}
    found = Discovery(DISCOVERY_METHOD, seen=seen)
    replies: dict[str, Mapping[str, Any]] = {}
    for answer in answers:
        if "id" not in answer:
            continue  # a notification
        if answer.get("error") is not None and answer["id"] == DISCOVERY_END:
            # Plugins are only recorded: a listing that fails (a catalog out of reach) is noted.
            found.other["plugin_list_error"] = [str(answer["error"])]
        elif answer.get("error") is not None:
            found.error = f"{answer.get('id')}: {answer.get('error')}"
            return found
        replies[str(answer["id"])] = answer.get("result") or {}
    missing = [r for r in ("initialize", "skills", "hooks", DISCOVERY_END) if r not in replies]
    if missing:
        found.error = f"no answer to {', '.join(missing)}"
        return found
    agent = USER_AGENT.match(str(replies["initialize"].get("userAgent") or ""))
    found.cli_version = agent.group(1) if agent else None
    for where in replies["skills"].get("data") or []:
        errors = [str(e) for e in where.get("errors") or []]
        if errors:
            found.other.setdefault("skill_errors", []).extend(errors)
        for skill in where.get("skills") or []:
            name, scope = str(skill.get("name")), skill.get("scope")
            if skill.get("pluginId"):  # named `plugin:name`, in the user scope
                found.seen["plugin_skills"] = [*(found.seen["plugin_skills"] or []), name]
            elif scope == "user":
                found.seen["skills"] = [*(found.seen["skills"] or []), name]
            elif scope == "system":
                found.builtin.setdefault("skills", []).append(name)
            else:
                found.other.setdefault("skills", []).append(f"{name} ({scope})")
    hooks = [h for where in replies["hooks"].get("data") or [] for h in where.get("hooks") or []]
    found.seen["hooks"] = sorted(
        json.dumps(h, sort_keys=True) for h in hooks if h.get("source") != PLUGIN_SOURCE
    )
    found.seen["plugin_hooks"] = sorted(
        plugin_hook_name(
            str(h.get("pluginId")),
            _event_name(str(h.get("eventName"))),
            str(h.get("matcher") or ""),
            _as_declared(str(h.get("command")), str(h.get("pluginId")), inner_home),
        )
        for h in hooks
        if h.get("source") == PLUGIN_SOURCE
    )
    found.other["plugins"] = sorted(
        str(p.get("name") or p.get("id"))
        for market in replies[DISCOVERY_END].get("marketplaces") or []
        for p in market.get("plugins") or []
    )
    return found


def _as_declared(command: str, plugin: str, inner_home: str) -> str:
    """A plugin hook's command as its hooks.json wrote it: codex lists it with
    ${CLAUDE_PLUGIN_ROOT} already replaced by the installed plugin's directory."""
    root = f"{inner_home.rstrip('/')}/{CODEX_PLACE.format(name=plugin.split('@', 1)[0])}"
    return command.replace(root, "${CLAUDE_PLUGIN_ROOT}")


def _event_name(event: str) -> str:
    """A hook event as hooks.json names it (`SessionStart`); codex lists `sessionStart`."""
    return event[:1].upper() + event[1:]
