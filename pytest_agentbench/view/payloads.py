"""The viewer's payloads, built from one look at the sources (loading.Loaded): `index` (the
overview and the tasks table), `trials/<C>` (per-trial columns of one configuration) and
`compare/<A>/<B>` (a paired comparison with the trials behind each McNemar cell). The index
carries the judges' tallies and the reviewed trials too (judged.py). Every figure
is the document's; the wording of notes is the other reports' (report/)."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_agentbench.report.evidence import NOT_SCORED, evidence_lines
from pytest_agentbench.report.metering import metering_lines
from pytest_agentbench.report.terminal import render_rollups
from pytest_agentbench.scoring.compare import OUTCOMES, compare
from pytest_agentbench.scoring.document import simulated_figures
from pytest_agentbench.tasks.observation import Observation, trial_tokens
from pytest_agentbench.trajectory.raw import ARCHIVE
from pytest_agentbench.view import judged
from pytest_agentbench.view.loading import Loaded

PROMPT_PREVIEW = 1200  # characters of a task's prompt in the index, searched and shown
RUN_FIELDS_LEFT_OUT = ("tasks_selected", "settings")  # long, and shown nowhere


def outcome_letter(observation: Observation) -> str:
    """P first exact, R exact after a recovery or retry, F not exact, S not scored."""
    if observation["status"] != "scored":
        return "S"
    if observation["first_exact"]:
        return "P"
    return "R" if observation["final_exact"] else "F"


def _configuration(key: str, report: dict[str, Any]) -> dict[str, Any]:
    run, summary = report["run"], report["summary"]
    return {
        "key": key,
        "name": str(run.get("name") or run.get("agent")),
        "sources": run.get("sources") or [],
        "run": {k: v for k, v in run.items() if k not in RUN_FIELDS_LEFT_OUT},
        "summary": summary,
        "integrity": report.get("integrity"),
        "trajectories": report.get("trajectories"),
        "measures": report.get("measures"),  # docs/measures.md
        "classes": report.get("classes") or [],
        "metering": report.get("metering"),
        "notes": evidence_lines(report),
        "evidence": [  # the trials of each outcome class besides scored, with their causes
            {"class": label, "trials": summary[key], "causes": summary.get(causes) or {}}
            for label, key, causes in NOT_SCORED
            if summary.get(key)
        ],
        "metering_lines": metering_lines(report["metering"]) if report.get("metering") else [],
        "simulated": sorted(simulated_figures(run)),
        "trials": len(report["observations"]),
    }


def _first_prompt(folder: Path | None) -> str | None:
    """The prompt of a trial's first round, from the first line of its raw evidence (the
    archive's first gzip member starts with it; nothing else of the file is read)."""
    if folder is None:
        return None
    try:
        with gzip.open(folder / ARCHIVE, "rt", encoding="utf-8", errors="replace") as archive:
            line = archive.readline()
        record = json.loads(line)
    except (OSError, EOFError, zlib.error, ValueError):
        return None
    prompt = record.get("prompt") if isinstance(record, dict) else None
    return prompt if isinstance(prompt, str) else None


def _task_rows(loaded: Loaded) -> list[dict[str, Any]]:
    """One row per task of any configuration: its family, tags, prompt's start, and per
    configuration the trials' outcome letters and indices."""
    rows: dict[str, dict[str, Any]] = {}
    for key, report in zip(loaded.keys, loaded.reports, strict=True):
        indices: dict[str, list[int]] = {}
        for index, observation in enumerate(report["observations"]):
            indices.setdefault(observation["task"], []).append(index)
        for task in report["tasks"]:
            row = rows.setdefault(
                task["id"],
                {
                    "id": task["id"],
                    "family": task.get("category") or "",
                    "tags": task.get("tags") or [],
                    "prompt": None,
                    "no_solution": bool(task.get("no_solution")),
                    "cells": {},
                },
            )
            trials = indices.get(task["id"], [])
            if not trials:
                continue
            observations = [report["observations"][i] for i in trials]
            if row["prompt"] is None:
                prompt = _first_prompt(loaded.trial_folder(observations[0]))
                row["prompt"] = prompt[:PROMPT_PREVIEW] if prompt else None
            row["cells"][key] = {
                "outcomes": "".join(map(outcome_letter, observations)),
                "trials": trials,
                "first_exact": task.get("first_exact"),
                "final_exact": task.get("final_exact"),
                "flaky": bool(task.get("flip_rate")),
            }
    for row in rows.values():
        shown = {cell["outcomes"].replace("S", "") for cell in row["cells"].values()}
        row["changed"] = len(row["cells"]) > 1 and len({_rate(o) for o in shown}) > 1
    return sorted(rows.values(), key=lambda row: row["id"])


def _rate(outcomes: str) -> float | None:
    """The share of exact trials in an outcome string (None: no scored trial)."""
    return sum(letter in "PR" for letter in outcomes) / len(outcomes) if outcomes else None


def _rollup_lines(document: dict[str, Any], sources: list[str]) -> list[str]:
    """The rollups of several configurations (not arms: those are paired with vanilla), as
    the terminal words them, whole."""
    rollups = document.get("rollups")
    if not rollups or document.get("arms"):
        return []
    where = f"agentbench report {' '.join(sources)} --format md"
    return render_rollups(rollups, where, budget=None)


def index(
    loaded: Loaded, live: bool, sources: list[str], reviews: judged.Reviews | None = None
) -> dict[str, Any]:
    """Everything the overview and tasks pages show; REVIEWS (judged.reviews) lists the
    reviewed trials."""
    document = loaded.document
    return {
        "title": "agentbench view",
        "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "live": live,
        "sources": sources,
        "configurations": [
            _configuration(key, report)
            for key, report in zip(loaded.keys, loaded.reports, strict=True)
        ],
        "arms": document.get("arms"),
        "rollups": _rollup_lines(document, sources),
        "pairs": [list(pair) for pair in loaded.pairs()],
        "tasks": _task_rows(loaded),
        "judgements": judged.judgements(loaded),
        "reviewed": judged.reviewed_trials(loaded, reviews or {}),
    }


def _figure(observation: Observation, *path: str) -> Any:
    value: Any = observation
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def trial_columns(loaded: Loaded, key: str) -> dict[str, Any]:
    """The per-trial columns of one configuration: what charts and trial lists need."""
    observations = loaded.report(key)["observations"]
    return {
        "key": key,
        "task": [o["task"] for o in observations],
        "repeat": [o["repeat"] for o in observations],
        "arm": [o.get("arm") for o in observations],
        "outcome": "".join(map(outcome_letter, observations)),
        "status": [o["status"] for o in observations],
        "tokens": [trial_tokens(o) for o in observations],
        "cost_usd": [o.get("cost_usd") for o in observations],
        "wall_s": [o.get("wall_s") for o in observations],
        "requests": [_figure(o, "trajectory", "requests") for o in observations],
        "tool_calls": [_figure(o, "trajectory", "tool_calls", "total") for o in observations],
        "steps": [_figure(o, "trajectory", "steps") for o in observations],
    }


CELLS = {  # McNemar's four cells by (base exact, candidate exact)
    (True, True): "both",
    (True, False): "base_only",
    (False, True): "candidate_only",
    (False, False): "neither",
}


def _paired_indices(
    pairs: list[Any], outcome: str, base: dict[str, int], candidate: dict[str, int]
) -> Iterator[tuple[str, list[int]]]:
    """(cell, [base index, candidate index]) of each trial pair, paired as the comparison
    pairs them (within a task, in repeat order)."""

    def ordered(side: Any) -> list[Observation]:
        return sorted(side.trials, key=lambda o: (o["repeat"], o.get("trial_id") or ""))

    for b, c in pairs:
        for old, new in zip(ordered(b), ordered(c), strict=False):
            cell = CELLS[(bool(old.get(outcome)), bool(new.get(outcome)))]
            yield cell, [base[_trial_key(old)], candidate[_trial_key(new)]]


def _trial_key(observation: Observation) -> str:
    return str(observation.get("trial_id") or (observation["task"], observation["repeat"]))


def comparison(loaded: Loaded, base_key: str, candidate_key: str) -> dict[str, Any]:
    """The paired comparison of two configurations; when they cannot be paired, why."""
    base, candidate = loaded.configuration(base_key), loaded.configuration(candidate_key)
    names = {"base_name": base.name, "candidate_name": candidate.name}
    head = {"base": base_key, "candidate": candidate_key, **names}
    try:
        result = compare(base, candidate)
    except ValueError as exc:
        return {**head, "problems": str(exc).splitlines(), "comparison": None, "mcnemar": {}}
    indices = {
        key: {_trial_key(o): i for i, o in enumerate(loaded.report(key)["observations"])}
        for key in (base_key, candidate_key)
    }
    mcnemar: dict[str, Any] = {}
    for outcome in OUTCOMES:
        cells: dict[str, list[list[int]]] = {name: [] for name in CELLS.values()}
        for cell, pair in _paired_indices(
            result.pairs, outcome, indices[base_key], indices[candidate_key]
        ):
            cells[cell].append(pair)
        figures = result.suite[outcome]["mcnemar"] or {}
        mcnemar[outcome] = {"cells": cells, "p": figures.get("p")}
    return {**head, "problems": [], "comparison": result.to_json(), "mcnemar": mcnemar}
