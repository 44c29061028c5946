"""What the judges said about the sources' run directories, for the viewer: each run
directory's judgements (the tally `agentbench report` shows, judge/tally.py) with its sides
matched to the view's configurations, and each trial's review findings from reviews.jsonl
(`agentbench review`). Read when a snapshot is taken; the files are in the version
(loading.version), so a run being judged while the viewer is open shows each new answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_agentbench.judge.calls import read_records
from pytest_agentbench.judge.judging import REVIEWS_FILE, read_judgements
from pytest_agentbench.judge.tally import tally
from pytest_agentbench.judge.verdict import SEVERITIES
from pytest_agentbench.trial.artifacts import TRIALS_DIR
from pytest_agentbench.view.loading import Loaded

Reviews = dict[str, list[dict[str, Any]]]  # a trial's folder (as text) -> its reviews


def _resolved(path: str | Path) -> str:
    try:
        return str(Path(path).resolve())
    except OSError:
        return str(path)


def _side_keys(loaded: Loaded, sources: list[dict[str, Any]]) -> dict[str, str | None]:
    """Each judged side's label -> the key of the configuration holding its trials (None:
    not in this view, or not one configuration)."""
    held = []
    for key, report in zip(loaded.keys, loaded.reports, strict=True):
        folders = {_resolved(s) for s in report["run"].get("sources") or []}
        arms = {o.get("arm") for o in report["observations"]}
        held.append((key, folders, arms))
    found: dict[str, str | None] = {}
    for source in sources:
        run_dir, arm = _resolved(source.get("run_dir") or ""), source.get("arm")
        keys = [
            key
            for key, folders, arms in held
            if run_dir in folders and (arm in arms if arm else arms <= {None})
        ]
        found[str(source.get("label"))] = keys[0] if len(keys) == 1 else None
    return found


def judgements(loaded: Loaded) -> list[dict[str, Any]]:
    """Per run directory judged: its tally block and the configuration of each side; a file
    that cannot be read is named (`problem`) instead of failing the whole view."""
    shown = []
    for run_dir in sorted(set(loaded.run_dirs.values()), key=str):
        entry: dict[str, Any] = {"run_dir": str(run_dir), "block": None, "problem": None}
        try:
            found = read_judgements(run_dir)
            if found is None:
                continue
            entry["block"] = tally(*found)  # judge/tally.py's judgements_block, its request kept
        except (OSError, ValueError, KeyError, TypeError) as exc:
            entry["problem"] = f"{type(exc).__name__}: {exc}"
            shown.append(entry)
            continue
        entry["sides"] = _side_keys(loaded, found[0].get("sources") or [])
        shown.append(entry)
    return shown


def _review(record: dict[str, Any]) -> dict[str, Any]:
    error = record.get("error")
    return {
        "judge": record.get("judge"),
        "at": record.get("at"),
        "findings": [] if error else list(record.get("findings") or []),
        "error": (error or {}).get("message") if error else None,
    }


def reviews(run_dirs: dict[str, Path]) -> Reviews:
    """Every review of the run directories, by trial folder (a bad reviews.jsonl shows as
    no reviews: the review command names its lines)."""
    found: Reviews = {}
    for run_dir in sorted(set(run_dirs.values()), key=str):
        try:
            records = read_records(run_dir / REVIEWS_FILE)
        except (OSError, ValueError):
            continue
        for record in records.values():
            trial = record.get("trial")
            if isinstance(trial, str) and trial:
                folder = str(run_dir / TRIALS_DIR / trial)
                found.setdefault(folder, []).append(_review(record))
    return found


def reviewed_trials(loaded: Loaded, found: Reviews) -> list[dict[str, Any]]:
    """The trials with reviews, for the overview: configuration key and index, findings by
    severity, and how many reviews failed."""
    if not found:
        return []
    listed = []
    for key, report in zip(loaded.keys, loaded.reports, strict=True):
        for index, observation in enumerate(report["observations"]):
            folder = loaded.trial_folder(observation)
            done = found.get(str(folder)) if folder is not None else None
            if not done:
                continue
            counts = dict.fromkeys(SEVERITIES, 0)
            for review in done:
                for finding in review["findings"]:
                    if finding.get("severity") in counts:
                        counts[finding["severity"]] += 1
            listed.append(
                {
                    "key": key,
                    "index": index,
                    "task": observation["task"],
                    "repeat": observation["repeat"],
                    "arm": observation.get("arm"),
                    "trial": Path(str(folder)).name,
                    "judges": sorted({str(r["judge"]) for r in done}),
                    "findings": counts,
                    "failed": sum(1 for r in done if r["error"]),
                }
            )
    return listed
