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

# Why the upstream never answered a request in full, as the meter saw it on the wire: the
# record's `failure`, and the FAILURE_HEADER of the meter's own 502 answer (which is not the
# upstream's: an upstream 502 carries no such header).
UPSTREAM_UNREACHABLE = "upstream_unreachable"
DNS_FAILURE = "dns_failure"
CONNECTION_RESET = "connection_reset"
WIRE_FAILURES = (UPSTREAM_UNREACHABLE, DNS_FAILURE, CONNECTION_RESET)
FAILURE_HEADER = "X-Agentbench-Meter-Failure"
CAP = "cap"  # the `injected` of a request the meter refused past a priming run's one step


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
    faulted = [i for i, r in enumerate(log) if r.get("injected") not in (None, CAP)]
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


def _wire_end(log: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The last request that says how the provider ended the trial: a success, a refusal
    (401, 402, 403, 429, 5xx) or no answer (a wire failure). Injected faults and the other
    answers (a 400 or 404 is the agent's request, not the provider) are passed over."""
    for record in reversed(log):
        status = record.get("status")
        if record.get("injected"):
            continue
        if record.get("failure") in WIRE_FAILURES:
            return record
        if isinstance(status, int) and (stop_cause(status) or 200 <= status < 300):
            return record
    return None


def wire_stop(log: Sequence[Mapping[str, Any]]) -> str | None:
    """`http_<status>` when the last upstream answer (not an injected fault) was 401, 402,
    403, 429 or 5xx and neither a success nor a wire failure came after it; else None."""
    end = _wire_end(log)
    return stop_cause(end.get("status")) if end is not None else None


def wire_failure(log: Sequence[Mapping[str, Any]]) -> str | None:
    """The wire failure (WIRE_FAILURES) of the last request the upstream never answered, when
    neither a success nor a provider refusal came after it; else None."""
    end = _wire_end(log)
    return end.get("failure") if end is not None else None


def failed_call(log: Sequence[Mapping[str, Any]]) -> str | None:
    """How the trial's last model call (not an injected fault) failed: its wire failure, or
    `http_<status>` for any answer but a success; None when it succeeded or none was made."""
    for record in reversed(log):
        if record.get("injected"):
            continue
        status = record.get("status")
        if record.get("failure"):
            return str(record["failure"])
        if isinstance(status, int):
            return None if 200 <= status < 300 else f"http_{status}"
    return None
