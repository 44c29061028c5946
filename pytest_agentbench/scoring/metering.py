"""The metering figures over a run's Observations, per agent: metered totals, cache-hit
share, side requests, self-report divergence and the fault readout, as the JSON report's
`metering` block holds them (report/metering.py prints them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.meter.records import FIELDS, main_tokens
from pytest_agentbench.tasks.observation import SCORED

COMPARED = ("input", "cached_input", "output")  # fields every CLI reports about itself
DIVERGENCE_FLAG = 0.01


def _known_sum(values: Sequence[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known and len(known) == len(values) else None


def divergence(observations: Sequence[Mapping[str, Any]], field: str) -> dict[str, Any]:
    """(self - metered) / metered for one token field, over trials where both are known.

    Like with like: the metered side is the requests that carried tools, the turns every
    CLI's own report counts; side requests (titles, summaries) are shown apart. Both sides
    are in the project's token meaning (the adapters normalise the self-report)."""
    pairs: list[tuple[int, int]] = []
    for obs in observations:
        wire_value = (main_tokens(obs.get("metered") or {}) or {}).get(field)
        own = (obs.get("tokens") or {}).get(field)
        if wire_value is not None and own is not None:
            pairs.append((own, wire_value))
    wire = sum(m for _, m in pairs)
    value = (sum(s for s, _ in pairs) - wire) / wire if pairs and wire else None
    return {
        "value": value,
        "trials": len(pairs),
        "flagged": value is not None and abs(value) > DIVERGENCE_FLAG,
    }


def fault_readout(observations: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Faulted trials, how many the agent retried and still solved, and the in-run control:
    the solve rate of the trials that met no fault."""
    faulted = [o for o in observations if (o.get("metered") or {}).get("faults")]
    clean = [o for o in observations if o.get("metered") and not o["metered"]["faults"]]
    scored = [o for o in clean if o["status"] == SCORED]
    return {
        "faulted_trials": len(faulted),
        "retried": sum(1 for o in faulted if o["metered"]["retried_after_fault"]),
        "still_solved": sum(1 for o in faulted if o["final_exact"]),
        "control_trials": len(scored),
        "control_solve_rate": (
            sum(1 for o in scored if o["final_exact"]) / len(scored) if scored else None
        ),
    }


def _share(cached: int | None, given: int | None) -> float | None:
    return cached / given if cached is not None and given else None


def priming_figures(observations: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The warm arms' priming runs, summed apart from the trials: how many ran, their metered
    requests and tokens and their own cost (None when any is unknown); None: no trial was
    primed."""
    primed = [o["priming"] for o in observations if o.get("priming")]
    if not primed:
        return None
    metered = [p["metered"] for p in primed if p.get("metered")]
    return {
        "runs": len(primed),
        "failed": sum(1 for p in primed if p.get("cause")),
        "metered_runs": len(metered),
        "requests": sum(m["requests"] for m in metered) if metered else None,
        "tokens": {
            field: _known_sum([(m["tokens"] or {}).get(field) for m in metered]) for field in FIELDS
        }
        if metered
        else None,
        "cost_usd": _known_float([p.get("cost_usd") for p in primed]),
    }


def _known_float(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(sum(known)) if known and len(known) == len(values) else None


def cache_figures(observations: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """An arm's prefix cache: warm when its trials were primed; the cache-hit share (cached
    over all input tokens) of its scored trials as metered (`metered_trials` counted) and as
    the CLI reported it (`reported_trials`), each over the trials where both counts are
    known; the priming runs apart (priming_figures), never in those shares."""
    scored = [o for o in observations if o["status"] == SCORED]
    wire = [main_tokens(o["metered"]) for o in scored if o.get("metered")]
    own = [o.get("tokens") for o in scored]
    wire_share, wire_n = _hit_share(wire)
    own_share, own_n = _hit_share(own)
    return {
        "prefix_cache": "warm" if any(o.get("priming") for o in observations) else "cold",
        "cache_hit_share": wire_share,
        "metered_trials": wire_n,
        "reported_cache_hit_share": own_share,
        "reported_trials": own_n,
        "priming": priming_figures(observations),
    }


def _hit_share(tokens: Sequence[Mapping[str, Any] | None]) -> tuple[float | None, int]:
    """Cached over all input tokens, summed over the trials where both are known, and how
    many trials that is."""
    pairs = [
        (t["cached_input"], t["input"])
        for t in tokens
        if t and isinstance(t.get("cached_input"), int) and isinstance(t.get("input"), int)
    ]
    return _share(sum(c for c, _ in pairs), sum(i for _, i in pairs)) if pairs else None, len(pairs)


def agent_block(
    observations: Sequence[Mapping[str, Any]], unmetered: str | None = None
) -> dict[str, Any]:
    """One agent's figures; unmetered: why its trials ran without the meter, if they did."""
    metered = [o for o in observations if "metered" in o]
    totals = {
        field: _known_sum([(o["metered"]["tokens"] or {}).get(field) for o in metered])
        for field in FIELDS
    }
    side = {
        field: _known_sum([(o["metered"]["side_tokens"] or {}).get(field, 0) for o in metered])
        for field in FIELDS
    }
    cached, total_input = totals["cached_input"], totals["input"]
    return {
        "trials": len(observations),
        "metered_trials": len(metered),
        "unmetered_reason": unmetered,
        "requests": sum(o["metered"]["requests"] for o in metered),
        "tokens": totals,
        "side_requests": sum(o["metered"].get("side_requests", 0) for o in metered),
        "side_tokens": side,
        "cache_hit_share": cached / total_input if cached is not None and total_input else None,
        "divergence": {field: divergence(metered, field) for field in COMPARED},
        "faults": fault_readout(metered),
        "priming": priming_figures(observations),  # never in the figures above
    }


def metering_block(
    observations: Sequence[Mapping[str, Any]], agent_info: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The report's `metering` block: one entry per agent. agent_info: the run's agent facts,
    whose `meter` note (`unmetered: why`) explains trials that ran without the meter."""
    by_agent: dict[str, list[Mapping[str, Any]]] = {}
    for obs in observations:
        by_agent.setdefault((obs.get("agent") or {}).get("name", "?"), []).append(obs)
    note = str((agent_info or {}).get("meter") or "")
    reason = note.partition("unmetered: ")[2] or None
    return {
        name: agent_block(group, reason if name == (agent_info or {}).get("name") else None)
        for name, group in sorted(by_agent.items())
    }
