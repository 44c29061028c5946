"""Family rollups of a multi-configuration report, as a public leaderboard's explorer shows them.

One row per model, model route, agent, harness and reasoning level: the median score of the
configurations of that family, with mean, quartiles, range and count. Only complete
(coverage 1), not quarantined configurations with a known score count: a partial run's score
is scaled down by its coverage and a quarantined one measures its provider, so either would
drag a family's median for reasons that are not the family's. They stay listed in their rows,
with the reason. Task-family slices (by category and by tag) use the same configurations.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

QUANTILE_METHOD = "linear"
"""Quartiles interpolate linearly between order statistics: numpy's default (Hyndman & Fan
type 7). With sorted values x[0..n-1], the p-quantile is read at position h = (n - 1) p."""

STATISTICS = ("median", "mean", "q1", "q3", "min", "max")


def quantile(ordered: Sequence[float], p: float) -> float:
    """The p-quantile of ORDERED (sorted, non-empty) by linear interpolation."""
    h = (len(ordered) - 1) * p
    low = math.floor(h)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (h - low) * (ordered[high] - ordered[low])


def spread(values: Sequence[float]) -> dict[str, Any]:
    """count, median, mean, q1, q3, min and max of VALUES; with no value all but count are null."""
    if not values:
        return {"count": 0, **dict.fromkeys(STATISTICS)}
    ordered = sorted(values)
    return {
        "count": len(ordered),
        "median": quantile(ordered, 0.5),
        "mean": sum(ordered) / len(ordered),
        "q1": quantile(ordered, 0.25),
        "q3": quantile(ordered, 0.75),
        "min": ordered[0],
        "max": ordered[-1],
    }


def provider_of(run: dict[str, Any]) -> str | None:
    """The provider a configuration's model was reached through: as the adapter recorded it
    (its base_url's host, else the CLI's default provider), else the host of a recorded
    base_url; unknown (None) for agents that reach no provider or records that say nothing."""
    info = run.get("agent_info") or {}
    if info.get("provider"):
        return str(info["provider"])
    if info.get("base_url"):
        return urlsplit(str(info["base_url"])).hostname
    return None


def cli_version_of(run: dict[str, Any]) -> str | None:
    version = (run.get("identity") or {}).get("cli_version")
    return version if version is not None else (run.get("agent_info") or {}).get("cli_version")


FAMILIES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "model": lambda run: {"model": run.get("model")},
    "route": lambda run: {"model": run.get("model"), "provider": provider_of(run)},
    "agent": lambda run: {"agent": run.get("agent")},
    "harness": lambda run: {"agent": run.get("agent"), "cli_version": cli_version_of(run)},
    "reasoning": lambda run: {"reasoning": run.get("reasoning")},
}
"""Each family's key fields, read from a configuration's `run` section. A null model or
reasoning level is the CLI's default; a null provider or CLI version is unknown."""

UNSET = {"model": "default", "reasoning": "default"}


def family_label(key: dict[str, Any]) -> str:
    """'gpt-5 @ api.openai.com', 'codex 0.46.0', 'default': the key's values, null spelt out."""
    words = [str(v) if v is not None else UNSET.get(k, "unknown") for k, v in key.items()]
    return " @ ".join(words) if "provider" in key else " ".join(words)


def quarantine_of(run: dict[str, Any]) -> str | None:
    """Why a configuration is quarantined (None if it is not): `quarantined` is a flag beside
    `quarantine.reason`; reports written before that held the reason in `quarantined`."""
    flag = run.get("quarantined")
    if not flag:
        return None
    detail = run.get("quarantine")
    reason = detail.get("reason") if isinstance(detail, dict) else None
    return str(reason or (flag if isinstance(flag, str) else "quarantined"))


def exclusion(report: dict[str, Any]) -> str | None:
    """Why a configuration is left out of rollups, or None when it counts."""
    summary = report["summary"]
    reasons = []
    quarantine = quarantine_of(report["run"])
    if quarantine:
        reasons.append(f"quarantined: {quarantine}")
    coverage = summary.get("coverage")
    if coverage != 1:
        observed, declared = summary.get("tasks_observed"), summary.get("tasks_declared")
        share = "unknown" if coverage is None else f"{100 * coverage:.1f}%"
        reasons.append(f"partial: coverage {share} ({observed} of {declared} tasks)")
    elif summary.get("score") is None:
        reasons.append("score unknown")
    return "; ".join(reasons) or None


def _name(report: dict[str, Any]) -> str:
    return str(report["run"].get("name") or report["run"].get("agent"))


def family_rows(reports: Sequence[dict[str, Any]], reasons: Sequence[str | None]) -> list[Any]:
    """The rows of every family, in FAMILIES order, then by label."""
    rows = []
    for family, key_of in FAMILIES.items():
        groups: dict[str, tuple[dict[str, Any], list[int]]] = {}
        for index, report in enumerate(reports):
            key = key_of(report["run"])
            groups.setdefault(repr(sorted(key.items())), (key, []))[1].append(index)
        for key, members in sorted(groups.values(), key=lambda group: family_label(group[0])):
            counted = [i for i in members if reasons[i] is None]
            rows.append(
                {
                    "family": family,
                    "key": key,
                    "label": family_label(key),
                    **spread([reports[i]["summary"]["score"] for i in counted]),
                    "configurations": [_name(reports[i]) for i in counted],
                    "excluded": [
                        {"configuration": _name(reports[i]), "reason": reasons[i]}
                        for i in members
                        if reasons[i] is not None
                    ],
                }
            )
    return rows


def slice_quality(tasks: Sequence[dict[str, Any]]) -> float | None:
    """0.75 x first exact + 0.25 x final exact over the slice's observed tasks, equal weight."""
    observed = [t for t in tasks if t["first_exact"] is not None and t["final_exact"] is not None]
    if not observed:
        return None
    first = sum(t["first_exact"] for t in observed) / len(observed)
    final = sum(t["final_exact"] for t in observed) / len(observed)
    return 0.75 * first + 0.25 * final


def _slices_of(task: dict[str, Any]) -> list[tuple[str, str]]:
    tags = task.get("tags") or []
    return [("category", task.get("category") or "(none)"), *(("tag", str(t)) for t in tags)]


def task_family_rows(counted: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per category and per tag: each counted configuration's slice quality, and their spread.
    No-solution tasks are scored on integrity, never on quality: they slice nothing."""
    slices: dict[tuple[str, str], set[str]] = {}
    for report in counted:
        for task in report["tasks"]:
            if task.get("no_solution"):
                continue
            for where in _slices_of(task):
                slices.setdefault(where, set()).add(task["id"])
    rows = []
    for (by, family), task_ids in sorted(slices.items()):
        values = {}
        for report in counted:
            quality = slice_quality(
                [t for t in report["tasks"] if t["id"] in task_ids and not t.get("no_solution")]
            )
            if quality is not None:
                values[_name(report)] = quality
        rows.append(
            {
                "by": by,
                "family": family,
                "tasks": len(task_ids),
                **spread(list(values.values())),
                "quality": values,
            }
        )
    return rows


def build_rollups(reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The `rollups` section of a multi-configuration document (layout: docs/metrics.md)."""
    reasons = [exclusion(report) for report in reports]
    counted = [r for r, reason in zip(reports, reasons, strict=True) if reason is None]
    return {
        "figure": "score",
        "quantiles": QUANTILE_METHOD,
        "configurations": [_name(r) for r in counted],
        "excluded": [
            {"configuration": _name(r), "reason": reason}
            for r, reason in zip(reports, reasons, strict=True)
            if reason is not None
        ],
        "families": family_rows(reports, reasons),
        "task_families": task_family_rows(counted),
    }
