"""The JSON report: run identity, summary, per-task figures and every observation."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pytest_agentbench import __version__
from pytest_agentbench.run.pooling import fixture_conflicts, pool, quarantine
from pytest_agentbench.scoring.attempts import (
    attempt_figures,
    attempts_summary,
    class_counts,
    task_class,
    trial_class,
)
from pytest_agentbench.scoring.legs import legs_block
from pytest_agentbench.scoring.measures import measure_block
from pytest_agentbench.scoring.metrics import classes, integrity, outcome_counts, summarize
from pytest_agentbench.scoring.trajectories import check_counts, trajectory_block
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.hashing import task_set_hash
from pytest_agentbench.tasks.observation import Observation, Outcome

SCHEMA_VERSION = 1


def outcome_string(trials: list[Observation], key: Outcome) -> str:
    """P/F per repeat in repeat order; trials not scored show as '-'."""
    marks = []
    for obs in trials:
        marks.append("-" if obs["status"] != "scored" else "P" if obs[key] else "F")
    return "".join(marks)


def build_report(
    settings: Settings,
    agent_info: dict[str, Any],
    declared: dict[str, dict[str, Any]],
    observations: list[Observation],
    started_at: str,
    finished_at: str,
    sandbox: dict[str, Any] | None = None,
    selected: Collection[str] | None = None,
) -> dict[str, Any]:
    """Assemble the report. declared maps task id -> {category, tags, fixture_hash,
    no_solution} for the task sources' tasks; selected names the tasks the run asked for
    (None: not recorded).

    No-solution tasks leave the summary (every accuracy figure and its coverage) for the
    integrity block, which counts its own coverage against the declared no-solution tasks;
    their per-task rows stay, marked, and every task shows in its class's row.

    The observations are pooled (each trial once, see run/pooling.py); a task whose trials carry
    different fixture hashes is a conflict: its cells are reported apart and none is scored.
    sandbox describes the provider that ran the trials, so `auto` is reported as what it
    chose; without it the requested kind is all there is to say.
    """
    ordered = sorted(pool(observations), key=lambda o: (o["task"], o["repeat"], o.get("arm", "")))
    conflicts = fixture_conflicts(ordered)
    counted = [o for o in ordered if o["task"] not in conflicts]
    no_solution = no_solution_tasks(declared, counted)
    solvable = [o for o in counted if o["task"] not in no_solution]
    unsolvable = [o for o in counted if o["task"] in no_solution]
    integrity_declared = sorted(t for t in declared if t in no_solution)
    summary, per_task = summarize(
        sorted(t for t in declared if t not in no_solution),
        solvable,
        settings.repeats,
        settings.seed,
    )
    _, per_unsolvable = summarize(integrity_declared, unsolvable, settings.repeats, settings.seed)
    summary.update(outcome_counts(counted))  # no-solution tasks' trials too
    summary["no_solution_trials"] = sum(1 for o in unsolvable if o["status"] == "scored")
    summary["tasks_selected"] = None if selected is None else len(selected)
    summary["fixture_conflicts"] = sorted(conflicts)
    by_task: dict[str, list[Observation]] = {}
    for obs in counted:
        by_task.setdefault(obs["task"], []).append(obs)
    retried = settings.retry_failures > 0
    solvable_tasks = {t: trials for t, trials in by_task.items() if t not in no_solution}
    max_attempts = 1 + settings.retry_failures
    summary["attempts"] = attempts_summary(solvable_tasks, max_attempts) if retried else None
    summary["failure_classes"] = class_counts([trial_class(o) for o in solvable])
    tasks = []
    for figures in sorted(per_task + per_unsolvable, key=lambda f: f["id"]):
        task_id = figures["id"]
        meta = declared.get(task_id) or _meta_from(by_task.get(task_id, []))
        trials = by_task.get(task_id, [])
        classes_of = [trial_class(o) for o in trials]
        tasks.append(
            {
                "id": task_id,
                "category": meta.get("category", ""),
                "tags": meta.get("tags", []),
                "fixture_hash": meta.get("fixture_hash"),
                **figures,
                "outcomes": outcome_string(trials, "first_exact"),
                "final_outcomes": outcome_string(trials, "final_exact"),
                "trial_classes": classes_of,
                "failure_class": task_class(classes_of),
                "failure_classes": class_counts(classes_of),
                "attempts": attempt_figures(trials, max_attempts) if retried else None,
                "fixture_conflict": task_id in conflicts,
                "no_solution": task_id in no_solution,
            }
        )
    integrity_block = None
    if no_solution:
        integrity_block = integrity(integrity_declared, unsolvable)
        integrity_block["solvable_final_exact"] = summary["final_exact"]
        integrity_block["solvable_trials"] = summary["trials"]
        integrity_block["transcript_checks"] = check_counts(unsolvable)
    hashes = [t["fixture_hash"] for t in tasks if t["fixture_hash"]]
    run = {
        "name": settings.run_label(),
        "agent": settings.agent,
        "agent_info": agent_info,
        "model": settings.model,
        "reasoning": settings.reasoning,
        "repeats": settings.repeats,
        "oracle_recoveries": settings.oracle_recoveries,
        "retry_failures": settings.retry_failures,
        "sandbox": (sandbox or {}).get("kind") or settings.sandbox,
        "sandbox_requested": settings.sandbox,
        "sandbox_detail": sandbox,
        "agent_timeout": settings.agent_timeout,
        "harness_version": __version__,
        "seed": settings.seed,
        "config_hash": settings.config_hash(),
        "task_set_hash": task_set_hash(hashes),
        "started_at": started_at,
        "finished_at": finished_at,
        "tasks_selected": None if selected is None else sorted(selected),
    }
    evidence = quarantine(ordered)
    run["quarantined"] = evidence["quarantined"]
    run["quarantine"] = evidence
    if settings.segments != 1 or settings.steers:
        run["segments"] = settings.segments
        run["steers"] = [list(steer) for steer in settings.steers]
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run": run,
        "summary": summary,
        "tasks": tasks,
        "integrity": integrity_block,
        "trajectories": trajectory_block(solvable),
        "measures": measure_block(solvable),
        "classes": classes({t["id"]: t["category"] or "" for t in tasks}, no_solution, counted),
        "conflicts": [
            {"id": task_id, "cells": conflict_cells(trials, settings)}
            for task_id, trials in sorted(conflicts.items())
        ],
        "observations": ordered,
    }
    legs = legs_block(solvable)
    if legs is not None:  # only a run whose trials ran in legs has the block
        report["legs"] = legs
    return report


def no_solution_tasks(
    declared: dict[str, dict[str, Any]], observations: list[Observation]
) -> set[str]:
    """The tasks graded on integrity: declared so, or with a trial that recorded it."""
    marked = {task_id for task_id, meta in declared.items() if meta.get("no_solution")}
    return marked | {o["task"] for o in observations if o.get("no_solution")}


def conflict_cells(trials: list[Observation], settings: Settings) -> list[dict[str, Any]]:
    """One cell per fixture hash of a conflicting task, each scored on its own trials."""
    by_hash: dict[str, list[Observation]] = {}
    for obs in trials:
        by_hash.setdefault(obs.get("fixture_hash") or "", []).append(obs)
    cells = []
    for fixture_hash, cell in sorted(by_hash.items()):
        task_id = cell[0]["task"]
        figures = summarize([task_id], cell, settings.repeats, settings.seed)[1][0]
        cells.append(
            {
                "fixture_hash": fixture_hash or None,
                "trials": figures["trials"],
                "first_exact": figures["first_exact"],
                "final_exact": figures["final_exact"],
                "outcomes": outcome_string(cell, "first_exact"),
            }
        )
    return cells


def simulated_figures(run: dict[str, Any]) -> set[str]:
    """The Observation fields the agent made up rather than measured (`agent_info.simulated`:
    the mock's tokens, cost_usd and wall_s); reports label them simulated."""
    return set((run.get("agent_info") or {}).get("simulated") or ())


def _meta_from(trials: list[Observation]) -> dict[str, Any]:
    if not trials:
        return {}
    first = trials[0]
    return {k: first.get(k) for k in ("category", "tags", "fixture_hash", "no_solution")}


def write_report(report: dict[str, Any], path: Path) -> None:
    """Write the report as JSON (creating the directory), streamed section by section.

    Sections are indented for reading, but list sections (tasks, observations) get one
    compact entry per line: json's fast C encoder runs only without indent, and indenting
    100,000 observations through the pure-Python encoder takes seconds and gigabytes.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    compact = json.JSONEncoder(ensure_ascii=False).encode  # one encoder, not one per entry
    with open(path, "w", encoding="utf-8") as out:
        out.write("{")
        for index, (key, value) in enumerate(report.items()):
            out.write(",\n " if index else "\n ")
            out.write(json.dumps(key) + ": ")
            if isinstance(value, list) and value:
                out.write("[")
                for position, item in enumerate(value):
                    out.write(",\n  " if position else "\n  ")
                    out.write(compact(item))
                out.write("\n ]")
            else:
                text = json.dumps(value, indent=1, ensure_ascii=False)
                out.write(text.replace("\n", "\n "))  # JSON strings hold no raw newline
        out.write("\n}\n")
