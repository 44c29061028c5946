"""What the meter saw, as the Observation carries it: per-request records summed into a trial's
`metered` figures, and the provider stop the wire shows.

Pure functions over the proxy's request log (server.RequestRecord.to_json); no aiohttp here,
so the harness side stays cheap to import.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.meter.counting import FIELDS
from pytest_agentbench.tasks.observation import Metered

STOP_STATUSES = frozenset({401, 402, 403, 429})


def stop_cause(status: int | None) -> str | None:
    """`http_<status>` for a provider refusal (401, 402, 403, 429 or 5xx), else None: the one
    rule for a status seen on the wire and for one a CLI reports in a documented event field."""
    if status is not None and (status in STOP_STATUSES or status >= 500):
        return f"http_{status}"
    return None


def _answered(record: Mapping[str, Any]) -> bool:
    status = record.get("status")
    return isinstance(status, int) and 200 <= status < 300 and not record.get("injected")


def _sum(usages: Sequence[Any]) -> dict[str, int | None] | None:
    if not usages:
        return None
    sums: dict[str, int | None] = {}
    for name in FIELDS:
        values = [u.get(name) if isinstance(u, Mapping) else None for u in usages]
        known = [v for v in values if isinstance(v, int)]
        sums[name] = sum(known) if len(known) == len(values) else None
    return sums


def summarize(log: Sequence[Mapping[str, Any]]) -> Metered:
    """Sum a request log (one trial's, in order) into the Observation's `metered`."""
    statuses: dict[str, int] = {}
    for record in log:
        key = str(record["status"]) if record.get("status") is not None else "none"
        statuses[key] = statuses.get(key, 0) + 1
    answered = [r for r in log if _answered(r) and r.get("protocol")]
    side = [r.get("usage") for r in answered if r.get("has_tools") is False]
    faulted = [i for i, r in enumerate(log) if r.get("injected")]
    return {
        "requests": len(log),
        "statuses": dict(sorted(statuses.items())),
        "tokens": _sum([r.get("usage") for r in answered]),
        "side_requests": len(side),
        "side_tokens": _sum(side),
        "faults": len(faulted),
        "retried_after_fault": (faulted[-1] < len(log) - 1) if faulted else None,
    }


def main_tokens(metered: Mapping[str, Any]) -> dict[str, int | None] | None:
    """The tokens of the requests that carried tools (the agent's own turns): a trial's
    metered tokens less its side requests'; a field unknown in either is unknown."""
    tokens = metered.get("tokens")
    side = metered.get("side_tokens") or {}
    if tokens is None or not metered.get("side_requests"):
        return tokens
    return {
        name: None if tokens.get(name) is None or side.get(name) is None else
        tokens[name] - side[name]
        for name in FIELDS
    }  # fmt: skip


def wire_stop(log: Sequence[Mapping[str, Any]]) -> str | None:
    """`http_<status>` when the last upstream answer (not an injected fault) was 401, 402,
    403, 429 or 5xx and no successful answer came after it; else None."""
    for record in reversed(log):
        status = record.get("status")
        if record.get("injected") or not isinstance(status, int):
            continue
        if (cause := stop_cause(status)) is not None:
            return cause
        if 200 <= status < 300:
            return None
    return None
