"""Harbor's Agent Trajectory Interchange Format (ATIF), pinned at v1.4: the trajectory as other
tools read it (to_atif), and ATIF read back (from_atif) for agents that write it themselves.

ATIF keeps what its schema names; the rest of a step (its attempt and round, each call's kind,
exit code and paths) goes into the `extra` objects the schema leaves free, so our own files
read back whole. A value we do not know is left out, never written as 0: ATIF readers sum them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, get_args

from pytest_agentbench.trajectory.events import integer, mapping, text
from pytest_agentbench.trajectory.kinds import classify
from pytest_agentbench.trajectory.model import (
    KINDS,
    MESSAGE_LIMIT,
    RESULT_LIMIT,
    Origin,
    Step,
    ToolCall,
    Trajectory,
    bounded_text,
)

SCHEMA_VERSION = "ATIF-v1.4"
UNKNOWN = "unknown"  # ATIF requires agent.name and .version; one not known is this
ORIGINS: tuple[Origin, ...] = get_args(Origin)
# Our token names -> ATIF's metrics fields (prompt_tokens counts cached input, as ours does)
METRICS = {"input": "prompt_tokens", "output": "completion_tokens", "cached_input": "cached_tokens"}
TOTALS = {
    "input": "total_prompt_tokens",
    "output": "total_completion_tokens",
    "cached_input": "total_cached_tokens",
}


def to_atif(trajectory: Trajectory, *, trial: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The trajectory as one ATIF-v1.4 document; trial (the trial's ids and outcome) is kept
    in the root extra and names the session when the CLI gave none."""
    agent: dict[str, Any] = {
        "name": trajectory.agent,
        "version": trajectory.agent_version or UNKNOWN,
    }
    if trajectory.model:
        agent["model_name"] = trajectory.model
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "session_id": trajectory.session_id or _session_id(trajectory, trial),
        "agent": agent,
        "steps": [_step(number, step) for number, step in enumerate(trajectory.steps, start=1)],
        "final_metrics": _final_metrics(trajectory),
    }
    if trajectory.notes:
        document["notes"] = "\n".join(trajectory.notes)
    extra: dict[str, Any] = {"origin": trajectory.origin}
    if trial is not None:
        extra["trial"] = dict(trial)
    document["extra"] = extra
    return document


def _session_id(trajectory: Trajectory, trial: Mapping[str, Any] | None) -> str:
    """The trial's id, else a hash of the trial (or the steps): the same trial, the same id."""
    if trial is not None and isinstance(trial.get("trial_id"), str) and trial["trial_id"]:
        return str(trial["trial_id"])
    basis = dict(trial) if trial is not None else [s.to_json() for s in trajectory.steps]
    basis_text = json.dumps(basis, sort_keys=True, default=str)
    return "agentbench-" + hashlib.sha256(basis_text.encode()).hexdigest()[:16]


def _step(number: int, step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {"step_id": number, "source": step.source, "message": step.message}
    if step.timestamp:
        out["timestamp"] = step.timestamp
    extra: dict[str, Any] = {"attempt": step.attempt, "round": step.round, "side": step.side}
    if step.request is not None:
        extra["request"] = step.request
    if step.source == "agent":  # ATIF allows these on agent steps only
        out.update(_agent_fields(step))
        if step.tool_calls:
            extra["tool_calls"] = [_call_extra(call) for call in step.tool_calls]
    out["extra"] = extra
    return out


def _agent_fields(step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if step.model:
        out["model_name"] = step.model
    if step.reasoning is not None:
        out["reasoning_content"] = step.reasoning
    if step.tool_calls:
        out["tool_calls"] = [
            {"tool_call_id": c.call_id, "function_name": c.name, "arguments": c.arguments}
            for c in step.tool_calls
        ]
        results = [
            {"source_call_id": c.call_id, "content": c.result}
            for c in step.tool_calls
            if c.result is not None
        ]
        if results:
            out["observation"] = {"results": results}
    metrics = _metrics(step)
    if metrics:
        out["metrics"] = metrics
    return out


def _metrics(step: Step) -> dict[str, Any]:
    tokens = step.tokens or {}
    metrics: dict[str, Any] = {
        field: tokens[ours] for ours, field in METRICS.items() if tokens.get(ours) is not None
    }
    extra: dict[str, Any] = {}
    if tokens.get("reasoning") is not None:
        extra["reasoning_tokens"] = tokens["reasoning"]
    if step.tokens_from is not None:
        extra["tokens_from"] = step.tokens_from
    if step.latency_s is not None:
        extra["latency_s"] = step.latency_s
    if extra:
        metrics["extra"] = extra
    return metrics


def _call_extra(call: ToolCall) -> dict[str, Any]:
    """What ATIF's tool call has no field for, matched to it by tool_call_id."""
    out: dict[str, Any] = {"tool_call_id": call.call_id, "kind": call.kind, "paths": call.paths}
    for key in ("exit_code", "duration_s", "command"):
        value = getattr(call, key)
        if value is not None:
            out[key] = value
    return out


def _final_metrics(trajectory: Trajectory) -> dict[str, Any]:
    """Totals only where every agent step's count is known: a partial sum reads as a whole."""
    steps = trajectory.agent_steps
    out: dict[str, Any] = {}
    for ours, field in {**TOTALS, "reasoning": "total_reasoning_tokens"}.items():
        values = [(step.tokens or {}).get(ours) for step in steps]
        if steps and all(isinstance(value, int) for value in values):
            total = sum(value for value in values if value is not None)
            if ours == "reasoning":
                out.setdefault("extra", {})[field] = total
            else:
                out[field] = total
    out["total_steps"] = len(trajectory.steps)
    return out


def from_atif(data: Mapping[str, Any]) -> Trajectory:
    """A trajectory from an ATIF document: ours read back whole; a foreign one as far as it
    goes (a call's kind, paths and command from its name and arguments, unknown values None)."""
    agent = mapping(data.get("agent"))
    extra = mapping(data.get("extra"))
    origin = extra.get("origin")
    version = agent.get("version")
    raw_notes = data.get("notes")
    raw_steps = data.get("steps")
    raws = [raw for raw in (raw_steps if isinstance(raw_steps, list) else []) if _is(raw)]
    steps = [_read_step(raw) for raw in raws]
    notes = raw_notes.splitlines() if isinstance(raw_notes, str) else []
    unmatched = [
        number
        for number, (raw, step) in enumerate(zip(raws, steps, strict=True), start=1)
        if _results(raw) and len(_results(raw)) > sum(c.result is not None for c in step.tool_calls)
    ]
    if unmatched:  # a result of no tool call (a system step's, say) has no place in a Step
        notes.append(
            "observation results of no tool call left out (steps "
            + ", ".join(map(str, unmatched))
            + ")"
        )
    return Trajectory(
        agent=str(agent.get("name") or UNKNOWN),
        origin=origin if origin in ORIGINS else "file",
        steps=steps,
        agent_version=version if isinstance(version, str) and version != UNKNOWN else None,
        model=text(agent.get("model_name")),
        session_id=text(data.get("session_id")) or None,
        notes=notes,
    )


def _is(value: Any) -> bool:
    return isinstance(value, Mapping)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _read_step(raw: Mapping[str, Any]) -> Step:
    source = raw.get("source")
    extra = mapping(raw.get("extra"))
    metrics = mapping(raw.get("metrics"))
    metrics_extra = mapping(metrics.get("extra"))
    results = {
        str(result.get("source_call_id")): text(result.get("content"))
        for result in _results(raw)
        if result.get("source_call_id") is not None
    }
    call_extras = {
        str(entry.get("tool_call_id")): entry
        for entry in extra.get("tool_calls") or []
        if _is(entry)
    }
    calls = [
        _read_call(call, results, call_extras) for call in raw.get("tool_calls") or [] if _is(call)
    ]
    tokens: dict[str, int | None] = {
        ours: integer(metrics.get(field)) for ours, field in METRICS.items()
    }
    tokens["reasoning"] = integer(metrics_extra.get("reasoning_tokens"))
    tokens_from = metrics_extra.get("tokens_from")
    return Step(
        source=source if source in ("user", "agent", "system") else "system",
        message=bounded_text(_message(raw.get("message")), MESSAGE_LIMIT) or "",
        timestamp=text(raw.get("timestamp")),
        reasoning=bounded_text(text(raw.get("reasoning_content")), MESSAGE_LIMIT),
        tool_calls=calls,
        tokens=tokens if any(value is not None for value in tokens.values()) else None,
        tokens_from=tokens_from if tokens_from in ("wire", "reported") else None,
        latency_s=_number(metrics_extra.get("latency_s")),
        model=text(raw.get("model_name")),
        request=integer(extra.get("request")),
        side=extra.get("side") is True,
        attempt=integer(extra.get("attempt")) or 0,
        round=integer(extra.get("round")) or 0,
    )


def _results(raw: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    results = mapping(raw.get("observation")).get("results")
    return [result for result in results if _is(result)] if isinstance(results, list) else []


def _message(value: Any) -> str:
    """A message as text: a string, or the text parts of a list of content parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [part.get("text") if _is(part) else part for part in value]
        return "\n".join(part for part in parts if isinstance(part, str))
    return ""


def _read_call(
    raw: Mapping[str, Any],
    results: Mapping[str, str | None],
    call_extras: Mapping[str, Mapping[str, Any]],
) -> ToolCall:
    call_id = str(raw.get("tool_call_id") or "")
    name = str(raw.get("function_name") or "")
    arguments = _arguments(raw.get("arguments"))
    ours = call_extras.get(call_id)
    if ours is not None and ours.get("kind") in KINDS:
        kind = ours["kind"]
        paths = [path for path in ours.get("paths") or [] if isinstance(path, str)]
        command = text(ours.get("command"))
    else:
        kind, paths, command = classify(name, arguments)
        ours = {}
    return ToolCall(
        call_id=call_id,
        name=name,
        kind=kind,
        arguments=arguments,
        result=bounded_text(results.get(call_id), RESULT_LIMIT),
        exit_code=integer(ours.get("exit_code")),
        duration_s=_number(ours.get("duration_s")),
        paths=list(paths),
        command=command,
    )


def _arguments(value: Any) -> dict[str, Any]:
    """ATIF's arguments object; a JSON string of one (as some writers leave it) is parsed."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {"input": value}
    return dict(value) if isinstance(value, Mapping) else {}
