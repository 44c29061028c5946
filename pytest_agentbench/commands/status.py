"""`agentbench status RUN_DIR`: progress of a running or finished run, from its directory.

It reads run.json, observations.jsonl (what every trial measured) and progress.jsonl (what the
current session planned, started and finished) and writes nothing. ``--json`` prints a
document of the versioned schema below (docs/ci.md); ``--watch`` refreshes until the run is
no longer running.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_agentbench.fs.wording import plural
from pytest_agentbench.tasks.observation import (
    BREAKER_OPEN,
    INTERRUPTED,
    Observation,
    observation_slot_task,
)

HELP = "progress of a running or finished run: trials done/planned, first exact, spend, ETA"
SCHEMA = "agentbench-status/1"
NOT_STARTED = ("budget_exhausted", BREAKER_OPEN, INTERRUPTED)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory (pytest --agentbench-dir)")
    parser.add_argument("--json", action="store_true", help=f"print JSON ({SCHEMA})")
    parser.add_argument(
        "--watch", action="store_true", help="refresh until the run is no longer running"
    )
    parser.add_argument(
        "--tasks", action="store_true", help="also a line per task (per arm and task with arms)"
    )
    parser.add_argument(
        "--interval", type=float, default=2.0, help="seconds between refreshes (default 2)"
    )


def read_progress(path: Path) -> list[dict[str, Any]]:
    """The lines of progress.jsonl; a line being written (or damaged) is skipped."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    records = []
    for line in data.split(b"\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def _alive(session: dict[str, Any]) -> bool | None:
    """Whether the session's controller still runs (None: on another host, cannot tell)."""
    if session.get("host") != socket.gethostname() or not isinstance(session.get("pid"), int):
        return None
    try:
        os.kill(session["pid"], 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _spend(scored: list[Observation]) -> dict[str, Any]:
    from pytest_agentbench.run.budget import Spend, spend_of

    spend = Spend()
    for observation in scored:
        spend.add(*spend_of(observation))
    return {
        "cost_usd": spend.cost_usd if spend.trials > spend.cost_unknown else None,
        "cost_unknown": spend.cost_unknown,
        "tokens": spend.tokens if spend.trials > spend.tokens_unknown else None,
        "tokens_unknown": spend.tokens_unknown,
    }


def _groups(
    observations: list[Observation], key: Callable[[Observation], str | None]
) -> dict[str, dict[str, Any]]:
    """Per arm (or per task): its trials recorded, by status, how many of them were reused
    (from the run resumed or another study's cache), and its first exact so far."""
    groups: dict[str, dict[str, Any]] = {}
    for observation in observations:
        group = groups.setdefault(
            str(key(observation)), {"recorded": {}, "first_exact": 0, "scored": 0, "reused": 0}
        )
        status = observation.get("status", "?")
        group["recorded"][status] = group["recorded"].get(status, 0) + 1
        group["reused"] += bool(observation.get("reused") or observation.get("reused_from"))
        if status == "scored" and not observation.get("no_solution"):
            group["scored"] += 1
            group["first_exact"] += bool(observation.get("first_exact"))
    return dict(sorted(groups.items()))


def status(run_dir: Path, now: float | None = None) -> dict[str, Any]:
    """The status document of a run directory (schema agentbench-status/1)."""
    from pytest_agentbench.run.progress import PROGRESS_FILE
    from pytest_agentbench.run.store import read_run_directory
    from pytest_agentbench.sandbox.placement import pool_engines, read_placement

    now = time.time() if now is None else now
    record = read_run_directory(run_dir)
    progress = read_progress(run_dir / PROGRESS_FILE)
    session = next((r for r in progress if "session" in r), {})
    planned = next((r["planned"] for r in progress if "planned" in r), None)
    finished = next((r for r in progress if "finished" in r), None)
    started: dict[str, float] = {}
    ended: list[dict[str, Any]] = []
    for line in progress:
        if "start" in line:
            started[line["start"]] = line["t"]
        elif "end" in line:
            started.pop(line["end"], None)
            ended.append(line)
    ran = [line for line in ended if line.get("status") not in NOT_STARTED]
    stopping = next((line for line in progress if "stopping" in line), None)
    stopped = record.run.get("stopped") or {}
    if finished is not None or (not progress and record.run.get("finished_at")):
        state = "interrupted" if stopped.get("by") == "interrupt" else "finished"
    elif not progress:
        state = "not started"
    else:
        state = "stopped" if _alive(session) is False else "stopping" if stopping else "running"
    counts: dict[str, int] = {}
    for observation in record.observations:
        counts[observation.get("status", "?")] = counts.get(observation.get("status", "?"), 0) + 1
    scored = [o for o in record.observations if o.get("status") == "scored"]
    # A no-solution trial's verifier passes when the agent did not cheat: not a solve.
    solvable = [o for o in scored if not o.get("no_solution")]
    first = sum(1 for o in solvable if o.get("first_exact"))
    measured = [line for line in ran if not line.get("reused")]
    elapsed = now - session["session"] if "session" in session else None
    eta = None
    if state in ("running", "stopping") and planned is not None and measured and elapsed:
        remaining = max(planned - len(ended), 0)
        eta = round(remaining * elapsed / len(measured), 1)
    settings = record.run.get("settings") or {}
    from pytest_agentbench.scoring.configurations import settings_from_json
    from pytest_agentbench.scoring.metrics import outcome_counts

    return {
        "schema": SCHEMA,
        "run_dir": str(run_dir),
        "run_id": record.run.get("run_id"),
        "label": settings_from_json(settings, str(run_dir)).run_label() if settings else None,
        "agent": settings.get("agent"),
        "model": settings.get("model"),
        "state": state,
        "exit_status": finished.get("exitstatus") if finished else None,
        "trials": {
            "planned": planned,
            "done": len(ran)
            if progress
            else len(record.observations) - sum(counts.get(s, 0) for s in NOT_STARTED),
            "not_started": sum(1 for line in ended if line.get("status") in NOT_STARTED)
            if progress
            else sum(counts.get(status, 0) for status in NOT_STARTED),
            "recorded": counts,
        },
        "not_scored": {
            key: value
            for key, value in outcome_counts(record.trials).items()
            if key not in NOT_STARTED  # trials' not_started
        },
        "stopped": record.run.get("stopped")
        or ({"by": stopping["stopping"], "reason": stopping.get("reason")} if stopping else None),
        "first_exact": {
            "passed": first,
            "scored": len(solvable),
            "rate": first / len(solvable) if solvable else None,
            "no_solution_left_out": len(scored) - len(solvable),
        },
        "spend": _spend(scored),
        "reused": sum(1 for line in ended if line.get("reused")),
        "baselines": _baselines(record.observations),
        "arms": _groups(record.observations, lambda o: o.get("arm"))
        if any(o.get("arm") for o in record.observations)
        else None,
        "tasks": _groups(record.observations, observation_slot_task),
        "running": [
            {"trial": nodeid, "age_s": round(now - at, 1)}
            for nodeid, at in sorted(started.items(), key=lambda item: item[1])
        ]
        if state in ("running", "stopping")
        else [],
        "elapsed_s": round(elapsed, 1)
        if elapsed is not None and state in ("running", "stopping")
        else None,
        "eta_s": eta,
        "engines": pool_engines(read_placement(run_dir)),
    }


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def _baselines(observations: list[Observation]) -> dict[str, Any]:
    """The trials reused from other studies (--agentbench-cache), and the runs they ran in."""
    reused = [o["reused_from"] for o in observations if o.get("reused_from")]
    return {"trials": len(reused), "runs": sorted(set(reused))}


def _group_line(name: str, group: dict[str, Any]) -> str:
    done = sum(n for status, n in group["recorded"].items() if status not in NOT_STARTED)
    others = ", ".join(
        [
            *(f"{n} {s}" for s, n in sorted(group["recorded"].items()) if s != "scored"),
            *([f"{group['reused']} reused"] if group["reused"] else []),
        ]
    )
    return f"  {name}: {done} done, first exact {group['first_exact']}/{group['scored']} scored" + (
        f" ({others})" if others else ""
    )


def render(doc: dict[str, Any], tasks: bool = False) -> list[str]:
    """The status as lines for a terminal (a line per task too with TASKS)."""
    from pytest_agentbench.report.evidence import not_scored_lines, pool_lines

    trials, first, spend = doc["trials"], doc["first_exact"], doc["spend"]
    planned = "?" if trials["planned"] is None else trials["planned"]
    state = doc["state"]
    if doc["exit_status"] is not None:
        state += f" (exit status {doc['exit_status']})"
    rate = "unknown" if first["rate"] is None else f"{100 * first['rate']:.1f}%"
    cost = "unknown" if spend["cost_usd"] is None else f"{spend['cost_usd']:.4f} USD"
    tokens = "unknown" if spend["tokens"] is None else str(spend["tokens"])
    lines = [
        f"run {doc['run_id']}  {doc['run_dir']}  {state}",
        (f"{doc['label']}: " if doc["label"] else "")
        + f"agent {doc['agent']}  model {doc['model'] or 'default'}: "
        f"{trials['done']}/{planned} trials done"
        + (f", {trials['not_started']} not started" if trials["not_started"] else ""),
        f"first exact so far: {first['passed']}/{first['scored']} scored ({rate})"
        + (
            f", {plural(first['no_solution_left_out'], 'no-solution trial')} left out"
            if first["no_solution_left_out"]
            else ""
        ),
        *not_scored_lines(doc["not_scored"]),
        f"spend so far: {cost} ({spend['cost_unknown']} trials without a cost), "
        f"{tokens} tokens ({spend['tokens_unknown']} without tokens)",
    ]
    lines += pool_lines(doc.get("engines"))
    baselines = doc["baselines"]
    if doc["reused"]:  # from the run resumed, a baseline or the cache, this session
        lines.append(f"reused instead of run: {plural(doc['reused'], 'trial')}")
    if baselines["trials"]:
        lines.append(
            f"baselines reused from other studies: {plural(baselines['trials'], 'trial')} "
            f"(from {', '.join(baselines['runs'])})"
        )
    if doc["arms"]:
        lines.append("arms:")
        lines += [_group_line(name, group) for name, group in doc["arms"].items()]
    if tasks:
        lines.append("tasks:")
        lines += [_group_line(name, group) for name, group in doc["tasks"].items()]
    stopped = doc["stopped"]
    if doc["state"] == "stopping":
        lines.append(f"stopping ({stopped['reason']}): the trials running are the last")
    elif stopped and stopped["by"] == "interrupt":
        lines.append(f"interrupted by {stopped['reason']}")
    elif stopped:
        lines.append(f"stopped by the {stopped['by']}: {stopped['reason']}")
    if doc["state"] in ("running", "stopping"):
        lines.append(f"elapsed {_duration(doc['elapsed_s'])}  ETA {_duration(doc['eta_s'])}")
        lines.append(f"running: {len(doc['running'])}")
        lines += [f"  {r['trial']}  {_duration(r['age_s'])}" for r in doc["running"]]
    return lines


def _show(doc: dict[str, Any], args: argparse.Namespace, clear: bool) -> None:
    if args.json:
        sys.stdout.write(json.dumps(doc) + "\n")
    else:
        lines = render(doc, args.tasks)
        sys.stdout.write(("\x1b[H\x1b[2J" if clear else "") + "\n".join(lines) + "\n")
    sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    if args.interval <= 0:
        raise ValueError(f"--interval {args.interval}: give a number of seconds > 0")
    clear = args.watch and not args.json and sys.stdout.isatty()
    try:
        while True:
            doc = status(args.run_dir)
            _show(doc, args, clear)
            if not args.watch or doc["state"] not in ("running", "stopping"):
                return 0
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 130
