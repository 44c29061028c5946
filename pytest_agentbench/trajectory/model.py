"""The normalised trajectory: one shape for every agent, whatever its CLI's events look like.

A trial's trajectory is a list of steps. A user step is a prompt the harness gave (the task, a
recovery round's feedback); an agent step is one model response with the tool calls it asked
for and their results; a system step is something the CLI or the harness said on its own.
Tokens have the project's meaning (agents.base.TokenUsage: input counts cached input, output
counts reasoning).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["shell", "read", "edit", "search", "other"]
KINDS: tuple[Kind, ...] = ("shell", "read", "edit", "search", "other")
Source = Literal["user", "agent", "system"]
# Where a trajectory's steps came from: the CLI's own events, the wire the meter saw, both
# joined, the mock agent's simulation, the command agent's stdout lines or its own file.
Origin = Literal["events", "wire", "events+wire", "simulated", "stdout", "file", "none"]
TokensFrom = Literal["wire", "reported"]

RESULT_LIMIT = 8 * 1024  # characters of a tool result kept in the trajectory (its end is cut)
MESSAGE_LIMIT = 32 * 1024  # characters of one message or reasoning text kept


def bounded_text(text: str | None, limit: int) -> str | None:
    """The text up to limit characters, saying how much was cut; None stays None."""
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"\n... ({len(text) - limit} characters cut)"


@dataclass
class ToolCall:
    """One tool call the model asked for, and what came of it where the source says."""

    call_id: str
    name: str
    kind: Kind
    arguments: dict[str, Any] = field(default_factory=dict)
    result: str | None = None  # bounded by RESULT_LIMIT; None: not seen
    exit_code: int | None = None
    duration_s: float | None = None
    paths: list[str] = field(default_factory=list)  # the files it reads or writes, as named
    command: str | None = None  # a shell call's command line

    def to_json(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "name": self.name,
            "kind": self.kind,
            "arguments": self.arguments,
            "result": self.result,
            "exit_code": self.exit_code,
            "duration_s": self.duration_s,
            "paths": self.paths,
            "command": self.command,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolCall:
        return cls(
            call_id=str(data.get("call_id") or ""),
            name=str(data.get("name") or ""),
            kind=next((kind for kind in KINDS if kind == data.get("kind")), "other"),
            arguments=dict(data.get("arguments") or {}),
            result=data.get("result"),
            exit_code=data.get("exit_code"),
            duration_s=data.get("duration_s"),
            paths=list(data.get("paths") or []),
            command=data.get("command"),
        )


@dataclass
class Step:
    """One step of a trajectory (see the module docstring)."""

    source: Source
    message: str = ""
    timestamp: str | None = None  # ISO 8601, when the source says
    reasoning: str | None = None  # the model's reasoning, where the CLI exposes it
    tool_calls: list[ToolCall] = field(default_factory=list)
    # The model request's tokens (input, cached_input, output, reasoning); None: not known.
    tokens: dict[str, int | None] | None = None
    tokens_from: TokensFrom | None = None
    latency_s: float | None = None  # the model request's, from sending it to its last byte
    model: str | None = None
    request: int | None = None  # the request's index in the meter's log of the round
    side: bool = False  # a model request without tools (a title, a summary): not a turn
    attempt: int = 0
    round: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "message": self.message,
            "timestamp": self.timestamp,
            "reasoning": self.reasoning,
            "tool_calls": [call.to_json() for call in self.tool_calls],
            "tokens": self.tokens,
            "tokens_from": self.tokens_from,
            "latency_s": self.latency_s,
            "model": self.model,
            "request": self.request,
            "side": self.side,
            "attempt": self.attempt,
            "round": self.round,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step:
        source = data.get("source")
        return cls(
            source=source if source in ("user", "agent", "system") else "system",
            message=str(data.get("message") or ""),
            timestamp=data.get("timestamp"),
            reasoning=data.get("reasoning"),
            tool_calls=[ToolCall.from_json(c) for c in data.get("tool_calls") or []],
            tokens=data.get("tokens"),
            tokens_from=data.get("tokens_from"),
            latency_s=data.get("latency_s"),
            model=data.get("model"),
            request=data.get("request"),
            side=bool(data.get("side")),
            attempt=int(data.get("attempt") or 0),
            round=int(data.get("round") or 0),
        )


@dataclass
class Trajectory:
    """A trial's steps, every attempt and round in order, and where they came from."""

    agent: str
    origin: Origin
    steps: list[Step] = field(default_factory=list)
    agent_version: str | None = None
    model: str | None = None
    session_id: str | None = None
    notes: list[str] = field(default_factory=list)  # what the builder could not reconcile

    @property
    def agent_steps(self) -> list[Step]:
        return [step for step in self.steps if step.source == "agent"]

    def tool_calls(self) -> list[ToolCall]:
        return [call for step in self.agent_steps for call in step.tool_calls]
