"""Claude Code adapter: `claude -p --output-format stream-json`, resumed with `--resume`."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.agents.base import TokenUsage
from pytest_agentbench.agents.cli_base import (
    DISCOVERY_END,
    CliAgent,
    CliTrial,
    StreamFacts,
    as_int,
)
from pytest_agentbench.agents.delivery import Places
from pytest_agentbench.agents.plugins import CLAUDE_PLACE, install_claude
from pytest_agentbench.agents.receipts import Discovery, plugin_hook_name
from pytest_agentbench.meter.records import stop_cause

PLUGIN_HOOK = "pluginHook"  # a hook listing entry's source when a plugin declares it
PLUGIN_SKILL = "plugin"  # a skills dialog entry's source when a plugin holds the skill
SYNTHETIC_MODEL = "<synthetic>"  # Claude Code's own stand-in message for an API error
# Control requests Claude Code answers in stream-json input mode before any user message, so
# no model turn starts: what loaded (commands, agents, version), the skills, memory files and
# hooks dialogs, and the session's usage (zero proves no model call). The last is answered last.
DISCOVERY = ("initialize", "get_skills_dialog", "get_memory_dialog", "get_hooks_listing")
DISCOVERY_METHOD = "stream-json control requests: " + ", ".join((*DISCOVERY, "get_usage"))
# Tools that reach past the trial (remote triggers, schedules, messages to other sessions,
# workflows) or outlive it; the subagent tool too when [capabilities] subagents = false.
DISALLOWED_TOOLS = ("RemoteTrigger", "CronCreate", "ScheduleWakeup", "SendMessage", "Workflow")
SUBAGENT_TOOLS = ("Agent", "Task")  # 2.1.332 lists it as Task; Agent is its newer name
USER = "user"  # the source of a user-level skill or memory file: where an arm is delivered


def _this_run(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Per-model usage of this run. modelUsage and total_cost_usd grow over a resumed
    session; model_usage_since_last_result counts this run only."""
    per_model = result.get("model_usage_since_last_result") or result.get("modelUsage") or {}
    return [m for m in per_model.values() if isinstance(m, Mapping)]


def _sum(entries: Sequence[Mapping[str, Any]], key: str) -> int | None:
    values = [as_int(entry.get(key)) for entry in entries]
    return None if not values or None in values else sum(v for v in values if v is not None)


def result_tokens(result: Mapping[str, Any]) -> TokenUsage | None:
    """Totals from the result event, over every model the session used.

    Claude splits prompt tokens into uncached input, cache reads and cache writes; input here
    counts all three. Thinking tokens are not reported separately (they are in output).
    """
    per_model = _this_run(result)
    if per_model:
        uncached = _sum(per_model, "inputTokens")
        reads = _sum(per_model, "cacheReadInputTokens")
        writes = _sum(per_model, "cacheCreationInputTokens")
        output = _sum(per_model, "outputTokens")
    else:
        usage = result.get("usage") or {}
        uncached = as_int(usage.get("input_tokens"))
        reads = as_int(usage.get("cache_read_input_tokens"))
        writes = as_int(usage.get("cache_creation_input_tokens"))
        output = as_int(usage.get("output_tokens"))
    if uncached is None or reads is None or writes is None:
        return TokenUsage(output=output) if output is not None else None
    return TokenUsage(
        input=uncached + reads + writes, cached_input=reads, output=output, cache_write=writes
    )


def result_cost(result: Mapping[str, Any]) -> float | None:
    """This run's dollars, unless Claude Code priced a model it does not know (costBasis
    unknown: a guess, not a price)."""
    per_model = _this_run(result)
    if any(m.get("costBasis") == "unknown" for m in per_model):
        return None
    costs = [m.get("costUSD") for m in per_model]
    if per_model and all(isinstance(c, int | float) and not isinstance(c, bool) for c in costs):
        return float(sum(c for c in costs if isinstance(c, int | float)))
    cost = result.get("total_cost_usd")  # without per-model figures: a single run's total
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None


class ClaudeAgent(CliAgent):
    """Anthropic Claude Code. CLAUDE_CONFIG_DIR is private; no MCP servers but the task's."""

    name = "claude"
    default_key_env = "ANTHROPIC_API_KEY"
    default_provider = "api.anthropic.com"
    default_upstream = "https://api.anthropic.com"
    credential_env = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
    key_variables = credential_env
    login_hint = (
        "a `claude /login` .credentials.json is not used: every trial has a private "
        "CLAUDE_CONFIG_DIR; `claude setup-token` prints a CLAUDE_CODE_OAUTH_TOKEN"
    )
    own_options = ("permission_mode", "retries")
    skills_by_dir = True  # its skills dialog and slash commands name the directory
    capability_switches = {  # noqa: RUF012
        "subagents": "--disallowedTools " + ",".join(SUBAGENT_TOOLS),
        "max_threads": "CLAUDE_CODE_MAX_CONCURRENT_SUBAGENTS",
    }
    # In CLAUDE_CONFIG_DIR; plugins in a private local marketplace (agents/plugins.py).
    delivery = Places(".claude/CLAUDE.md", ".claude/skills", CLAUDE_PLACE)

    def prepare(self, trial: CliTrial) -> None:
        install_claude(trial.plugins, trial.host(".claude"), trial.inner(".claude"))

    def reads_key_env(self) -> bool:
        return True  # passed on as ANTHROPIC_API_KEY, with or without base_url

    def credential_names(self) -> tuple[str, ...]:
        # A gateway may take a bearer token as well as a key: both reach Claude Code.
        return (self.key_env, *self.key_variables)

    @property
    def permission_mode(self) -> str:
        return self.option("permission_mode") or "bypassPermissions"

    def adapter_env(self, trial: CliTrial) -> dict[str, str]:
        env = {
            "CLAUDE_CONFIG_DIR": trial.inner(".claude"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
            # Subagents and Bash commands run in the foreground, within the trial's time.
            "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1",
        }
        if self.settings.model:  # an Agent call's or an agent file's model is ignored
            env["CLAUDE_CODE_SUBAGENT_MODEL"] = self.settings.model
            env["CLAUDE_CODE_SUBAGENT_MODEL_FORCE"] = "1"
        if trial.capabilities.max_threads is not None:
            env["CLAUDE_CODE_MAX_CONCURRENT_SUBAGENTS"] = str(trial.capabilities.max_threads)
        if self.permission_mode == "bypassPermissions":
            env["IS_SANDBOX"] = "1"  # the harness is the sandbox; without it root is refused
        if trial.wire_url:
            env["ANTHROPIC_BASE_URL"] = trial.wire_url
        if self.key_env != self.default_key_env and self.key_env in os.environ:
            env["ANTHROPIC_API_KEY"] = os.environ[self.key_env]
        retries = self.option("retries")
        if retries is not None:
            env["CLAUDE_CODE_MAX_RETRIES"] = retries
        return env

    def launch(self, trial: CliTrial) -> list[str]:
        """The switches every run of a trial shares, discovery included."""
        argv = ["--output-format", "stream-json", "--verbose", "--strict-mcp-config"]
        argv += ["--permission-mode", self.permission_mode, "--include-hook-events"]
        denied = (*DISALLOWED_TOOLS, *(() if trial.capabilities.subagents else SUBAGENT_TOOLS))
        argv += ["--disallowedTools", ",".join(denied)]
        if self.settings.model:
            argv += ["--model", self.settings.model]
        if self.settings.reasoning:
            argv += ["--effort", self.settings.reasoning]
        return argv

    def command(self, prompt: str, session_id: str | None, trial: CliTrial) -> list[str]:
        argv = ["-p", *self.launch(trial)]
        if session_id:
            argv += ["--resume", session_id]
        if trial.step_limit is not None:
            argv += ["--max-turns", str(trial.step_limit)]
        return [*argv, "--", prompt]

    def ask_command(self, system: str, trial: CliTrial) -> list[str]:
        """argv after the binary that asks one question read from stdin, in the working
        directory, with no tools, MCP servers, slash commands, project settings or saved
        session, and `system` in place of Claude Code's own system prompt; its one JSON
        object is the `result` event `parse` reads."""
        argv = ["-p", "--output-format", "json", "--tools", "", "--strict-mcp-config"]
        argv += ["--setting-sources", "user", "--disable-slash-commands"]
        argv += ["--no-session-persistence"]
        if system:
            argv += ["--system-prompt", system]
        if self.settings.model:
            argv += ["--model", self.settings.model]
        return argv

    def discovery_requests(self, trial: CliTrial, workspace: str) -> tuple[list[str], str]:
        ids = [*DISCOVERY, DISCOVERY_END]
        subtypes = [*DISCOVERY, "get_usage"]
        lines = [
            json.dumps({"type": "control_request", "request_id": i, "request": {"subtype": s}})
            for i, s in zip(ids, subtypes, strict=True)
        ]
        return ["-p", "--input-format", "stream-json", *self.launch(trial)], "\n".join(lines) + "\n"

    def read_discovery(self, answers: Sequence[Mapping[str, Any]], trial: CliTrial) -> Discovery:
        return read_claude_discovery(answers, trial.inner_home)

    def reported_treatment(self, events: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
        return reported_by_init(events)

    def parse(self, events: Sequence[Mapping[str, Any]]) -> StreamFacts:
        """A failed run's `result` says is_error with the HTTP status in api_error_status
        (its subtype still says success); without a status (no connection, a broken stream)
        it is no provider stop."""
        facts = StreamFacts(tool_calls=0)
        for event in events:
            kind = event.get("type")
            facts.session_id = event.get("session_id") or facts.session_id
            if kind == "assistant":
                message = event.get("message") or {}
                if event.get("is_api_error_message") or message.get("model") == SYNTHETIC_MODEL:
                    continue  # Claude Code's own text about the error, not the model's
                facts.model_reported = message.get("model") or facts.model_reported
                blocks = message.get("content") or []
                facts.tool_calls = (facts.tool_calls or 0) + sum(
                    1 for b in blocks if isinstance(b, Mapping) and b.get("type") == "tool_use"
                )
                texts = [
                    b["text"]
                    for b in blocks
                    if isinstance(b, Mapping) and b.get("type") == "text" and b.get("text")
                ]
                if texts:
                    facts.final_message = "\n".join(texts)
            elif kind == "result":
                facts.tokens = result_tokens(event)
                facts.cost_usd = result_cost(event)
                facts.turns = as_int(event.get("num_turns"))
                if not event.get("is_error") and isinstance(event.get("result"), str):
                    facts.final_message = event["result"]  # the final answer, as shown
                if event.get("is_error"):
                    facts.provider_error = stop_cause(as_int(event.get("api_error_status")))
        return facts


def _home_path(path: object, inner_home: str) -> str:
    """A path the CLI reports, shown from the trial's home (`~/.claude/CLAUDE.md`)."""
    text = str(path)
    home = inner_home.rstrip("/") + "/"
    return "~/" + text[len(home) :] if text.startswith(home) else text


def read_claude_discovery(answers: Sequence[Mapping[str, Any]], inner_home: str) -> Discovery:
    """The receipt's facts from Claude Code's control responses: user-level skills and
    memory files are what an arm delivers; built-in commands and agents are recorded apart,
    as are project-level ones (the task's own files)."""
    seen: dict[str, list[str] | None] = {"guidance": [], "skills": [], "plugin_skills": []}
    found = Discovery(DISCOVERY_METHOD, seen=seen)
    replies: dict[str, Mapping[str, Any]] = {}
    for answer in answers:
        response = answer.get("response") if answer.get("type") == "control_response" else None
        if not isinstance(response, Mapping):
            continue
        if response.get("subtype") != "success":
            found.error = f"{response.get('request_id')}: {response.get('error')}"
            return found
        replies[str(response.get("request_id"))] = response.get("response") or {}
    missing = [r for r in (*DISCOVERY, DISCOVERY_END) if r not in replies]
    if missing:
        found.error = f"no answer to {', '.join(missing)}"
        return found
    init = replies["initialize"]
    found.cli_version = init.get("claude_code_version")
    commands = [c for c in init.get("commands") or [] if isinstance(c, Mapping)]
    found.builtin["commands"] = sorted(str(c.get("name")) for c in commands if c.get("builtin"))
    found.builtin["agents"] = sorted(
        str(a.get("name")) for a in init.get("agents") or [] if isinstance(a, Mapping)
    )
    found.other["commands"] = sorted(str(c.get("name")) for c in commands if not c.get("builtin"))
    for skill in replies["get_skills_dialog"].get("skills") or []:
        source, name = skill.get("source"), str(skill.get("name"))
        if source == USER:
            found.seen["skills"] = [*(found.seen["skills"] or []), name]
        elif source == PLUGIN_SKILL:  # named `plugin:directory`
            found.seen["plugin_skills"] = [*(found.seen["plugin_skills"] or []), name]
        else:
            found.other.setdefault("skills", []).append(f"{name} ({source})")
        if skill.get("state") != "on":
            found.other.setdefault("skills_not_on", []).append(f"{name} ({skill.get('state')})")
    memory = replies["get_memory_dialog"]
    for entry in memory.get("files") or []:
        if not entry.get("exists"):
            continue
        path = _home_path(entry.get("path"), inner_home)
        if entry.get("kind") == USER:
            found.seen["guidance"] = [*(found.seen["guidance"] or []), path]
        else:
            found.other.setdefault("guidance", []).append(f"{path} ({entry.get('kind')})")
    auto = (memory.get("auto_memory") or {}).get("status")
    found.other["auto_memory"] = [str(auto)]
    hooks = [h for h in replies["get_hooks_listing"].get("hooks") or [] if isinstance(h, Mapping)]
    found.seen["hooks"] = sorted(
        json.dumps(h, sort_keys=True) for h in hooks if h.get("source") != PLUGIN_HOOK
    )
    found.seen["plugin_hooks"] = sorted(
        plugin_hook_name(
            str(h.get("pluginName")),
            str(h.get("event")),
            str(h.get("matcher") or ""),
            str(h.get("commandText")),
        )
        for h in hooks
        if h.get("source") == PLUGIN_HOOK
    )
    session = replies[DISCOVERY_END].get("session") or {}
    usage = session.get("model_usage")
    cost = session.get("total_cost_usd")
    if isinstance(usage, Mapping) and isinstance(cost, int | float):
        found.model_calls = len(usage) if usage or cost else 0
    return found


def reported_by_init(events: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """What the coding run's system/init said it loaded (its skills the built-in ones too,
    which the receipt knows), and the hooks that ran (hook_started events)."""
    init = next(
        (e for e in events if e.get("type") == "system" and e.get("subtype") == "init"), None
    )
    if init is None:
        return None
    hooks = [
        str(e.get("hook_name") or e.get("hook_event"))
        for e in events
        if e.get("type") == "system" and e.get("subtype") == "hook_started"
    ]
    return {
        "cli_version": init.get("claude_code_version"),
        "all_skills": list(init.get("skills") or []),
        "plugins": [p.get("name") for p in init.get("plugins") or [] if isinstance(p, Mapping)],
        "agents": list(init.get("agents") or []),
        "mcp_servers": list(init.get("mcp_servers") or []),
        "tools": list(init.get("tools") or []),
        "hooks_ran": hooks,
    }
