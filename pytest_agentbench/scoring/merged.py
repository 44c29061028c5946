"""The document of several configurations (agentbench merge and report): each one scored on
the union of their tasks, ranked, combined per task, rolled up and, when they are the arms of
one run, compared arm against vanilla. One configuration is its own report."""

from __future__ import annotations

from typing import Any

from pytest_agentbench.scoring.arm_compare import arms_block
from pytest_agentbench.scoring.configurations import DOCUMENT_KIND, Configuration
from pytest_agentbench.scoring.rollups import build_rollups
from pytest_agentbench.tasks.arms import VANILLA


def _combined(reports: list[dict[str, Any]], suite: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per task the mean over configurations (equal weight), then the mean over tasks; the
    solvable tasks only (no-solution ones are scored on integrity)."""
    tasks: list[dict[str, Any]] = []
    conflicts = []
    indexed = [{t["id"]: t for t in report["tasks"]} for report in reports]
    unsolvable = {t for by_id in indexed for t, row in by_id.items() if row.get("no_solution")}
    solvable = sorted(t for t, meta in suite.items() if not meta.get("no_solution"))
    for task_id in (t for t in solvable if t not in unsolvable):
        hashes = set()
        rates: dict[str, list[float]] = {"first_exact": [], "final_exact": []}
        for by_id in indexed:
            figures = by_id[task_id]
            if figures["trials"]:
                hashes.add(figures["fixture_hash"])
                for key, values in rates.items():
                    values.append(figures[key])
        if len(hashes) > 1:
            conflicts.append(task_id)
            continue
        if rates["first_exact"]:
            tasks.append(
                {
                    "id": task_id,
                    "configurations": len(rates["first_exact"]),
                    **{k: sum(v) / len(v) for k, v in rates.items()},
                }
            )

    def mean(key: str) -> float | None:
        return sum(float(t[key]) for t in tasks) / len(tasks) if tasks else None

    first, final = mean("first_exact"), mean("final_exact")
    return {
        "tasks_declared": sum(1 for t in solvable if t not in unsolvable),
        "tasks_scored": len(tasks),
        "first_exact": first,
        "final_exact": final,
        "quality": None if first is None or final is None else 0.75 * first + 0.25 * final,
        "fixture_conflicts": conflicts,
        "tasks": tasks,
    }


def build_document(configurations: list[Configuration]) -> dict[str, Any]:
    """One configuration: an ordinary report. Several: each scored on the union of their tasks."""
    if len(configurations) == 1:
        return configurations[0].report()
    suite: dict[str, dict[str, Any]] = {}
    for config in configurations:
        for task_id, meta in config.declared.items():
            suite.setdefault(task_id, meta)
    reports = [config.report(suite) for config in configurations]
    ranked = sorted(
        (r for r in reports if not r["run"]["quarantined"] and r["summary"]["score"] is not None),
        key=lambda r: -r["summary"]["score"],
    )
    for report in reports:
        report["run"]["rank"] = None
    for position, report in enumerate(ranked, start=1):
        report["run"]["rank"] = position
    counted = [r for r in reports if not r["run"]["quarantined"]]
    document = {
        "schema_version": 1,
        "kind": DOCUMENT_KIND,
        "configurations": reports,
        "combined": _combined(counted, suite),
        "rollups": build_rollups(reports),
    }
    if _arms_of_one_run(configurations):
        anchors = {c.name: c.anchor for c in configurations if c.anchor}
        document["arms"] = arms_block(configurations, anchors)
    return document


def _arms_of_one_run(configurations: list[Configuration]) -> bool:
    """Whether the configurations are the arms of a run with arms: a vanilla one, and the
    others named by the arm their identity records."""
    names = [c.name for c in configurations]
    treatments = [c for c in configurations if c.name != VANILLA]
    return VANILLA in names and all(c.identity.get("arm") == c.name for c in treatments)
