"""opencode adapter: `opencode run --format json`, resumed with `-s SESSION`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from pytest_agentbench.agents.base import TokenUsage
from pytest_agentbench.agents.cli_base import (
    CliAgent,
    CliTrial,
    StreamFacts,
    as_int,
)
from pytest_agentbench.agents.delivery import Places
from pytest_agentbench.meter.records import stop_cause
from pytest_agentbench.settings import Settings

PROVIDER = "agentbench"
CONFIG_FILE = "opencode.json"


def _known_sum(values: Sequence[int | None]) -> int | None:
    """The sum, or None when any part is unknown (unknown is never counted as zero)."""
    return None if not values or None in values else sum(v for v in values if v is not None)


def step_tokens(steps: Sequence[Mapping[str, Any]]) -> TokenUsage | None:
    """Totals over step_finish parts, in the one meaning.

    opencode's `input` excludes cache reads and writes, and its `output` excludes reasoning:
    both are added back here.
    """
    if not steps:
        return None
    caches = [step.get("cache") or {} for step in steps]
    uncached = _known_sum([as_int(step.get("input")) for step in steps])
    reads = _known_sum([as_int(cache.get("read")) for cache in caches])
    writes = _known_sum([as_int(cache.get("write")) for cache in caches])
    output = _known_sum([as_int(step.get("output")) for step in steps])
    reasoning = _known_sum([as_int(step.get("reasoning")) for step in steps])
    return TokenUsage(
        input=_known_sum([uncached, reads, writes]),
        cached_input=reads,
        output=_known_sum([output, reasoning]),
        reasoning=reasoning,
        cache_write=writes,
    )


class OpencodeAgent(CliAgent):
    """sst opencode. Config, data, cache and state live in the trial's private home."""

    name = "opencode"
    default_key_env = "OPENAI_API_KEY"
    credential_env = (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENROUTER_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_GENERATIVE_AI_API_KEY",
        "GROQ_API_KEY",
        "DEEPSEEK_API_KEY",
        "XAI_API_KEY",
        "MISTRAL_API_KEY",
    )
    key_variables = credential_env
    login_hint = (
        "an `opencode auth login` auth.json is not used: every trial has a private "
        "XDG_DATA_HOME; for an endpoint that needs no key, set the variable to any value"
    )
    own_options = ("permission",)
    # $XDG_CONFIG_HOME/opencode, which is also ~/.config/opencode in the private home.
    delivery = Places(
        ".config/opencode/AGENTS.md",
        ".config/opencode/skills",
        no_plugins="opencode 1.18.33's plugins are JavaScript modules named in its config; it "
        "reads no plugin directory's manifest, skills or hooks",
    )

    def __init__(self, settings: Settings, prices: Any = None) -> None:
        super().__init__(settings, prices)
        if self.base_url and not settings.model:
            raise pytest.UsageError(
                "--agent=opencode with --agent-opt base_url=URL needs --model NAME "
                "(the model name the endpoint serves)"
            )

    def provider(self) -> str | None:
        """opencode names its provider in the model, PROVIDER/MODEL (`anthropic/claude-...`):
        that provider's id; unknown when the model is opencode's own default."""
        if self.base_url:
            return super().provider()
        model = self.settings.model or ""
        return model.split("/", 1)[0] if "/" in model else None

    @property
    def model_arg(self) -> str | None:
        model = self.settings.model
        return f"{PROVIDER}/{model}" if self.base_url and model else model

    def config(self, trial: CliTrial) -> dict[str, Any]:
        """opencode.json: permissions, no updates or sharing, and the provider for base_url.

        The API key is referenced as {env:NAME}, so it is never written to disk.
        """
        config: dict[str, Any] = {
            "$schema": "https://opencode.ai/config.json",
            "permission": self.option("permission") or "allow",
            "autoupdate": False,
            "share": "disabled",
        }
        if self.base_url and self.settings.model:
            config["provider"] = {
                PROVIDER: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": PROVIDER,
                    "options": {"baseURL": trial.wire_url, "apiKey": f"{{env:{self.key_env}}}"},
                    "models": {self.settings.model: {"name": self.settings.model}},
                }
            }
        if trial.step_limit is not None:  # the steps of `opencode run`'s default agent
            config["agent"] = {"build": {"steps": trial.step_limit}}
        return config

    def prepare(self, trial: CliTrial) -> None:
        trial.host(CONFIG_FILE).write_text(
            json.dumps(self.config(trial), indent=2), encoding="utf-8"
        )

    def adapter_env(self, trial: CliTrial) -> dict[str, str]:
        env = {
            "OPENCODE_CONFIG": trial.inner(CONFIG_FILE),
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_SHARE": "1",
        }
        if self.base_url:
            env["OPENCODE_DISABLE_MODELS_FETCH"] = "1"
        return env

    def reported_cost_is_known(self) -> bool:
        # A provider of our own making has no prices: opencode reports 0, which means unknown.
        return not self.base_url

    def command(self, prompt: str, session_id: str | None, trial: CliTrial) -> list[str]:
        # A fixed --title spares the extra title request opencode would not count in its usage.
        argv = ["run", "--pure", "--format", "json", "--title", "agentbench"]
        if self.model_arg:
            argv += ["-m", self.model_arg]
        if self.settings.reasoning:
            argv += ["--variant", self.settings.reasoning]
        if session_id:
            argv += ["-s", session_id]
        return [*argv, "--", prompt]

    def parse(self, events: Sequence[Mapping[str, Any]]) -> StreamFacts:
        """An `error` event of a provider's answer carries its HTTP status in
        error.data.statusCode; an error without one is no provider stop."""
        facts = StreamFacts(tool_calls=0)
        steps: list[Mapping[str, Any]] = []
        costs: list[float | None] = []
        texts: dict[object, list[str]] = {}  # message id -> its text parts
        for event in events:
            kind = event.get("type")
            facts.session_id = event.get("sessionID") or facts.session_id
            part = event.get("part") or {}
            if kind == "text" and isinstance(part.get("text"), str):
                texts.setdefault(part.get("messageID"), []).append(part["text"])
            elif kind == "tool_use":
                facts.tool_calls = (facts.tool_calls or 0) + 1
            elif kind == "step_finish":
                steps.append(part.get("tokens") or {})
                cost = part.get("cost")
                costs.append(float(cost) if isinstance(cost, int | float) else None)
                if part.get("reason") == "stop" and part.get("messageID") in texts:
                    facts.final_message = "\n".join(texts[part.get("messageID")])
            elif kind == "error":
                data = (event.get("error") or {}).get("data") or {}
                facts.provider_error = stop_cause(as_int(data.get("statusCode")))
        facts.turns = len(steps) if steps else None
        facts.tokens = step_tokens(steps)
        facts.cost_usd = None if not costs or None in costs else sum(c or 0.0 for c in costs)
        return facts
