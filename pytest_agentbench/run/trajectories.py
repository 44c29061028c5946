"""A run directory's trajectories: rebuilt from the raw evidence its trials kept (retrace), and
exported one ATIF file per trial (export_atif).

Retrace uses today's parsers: a parser fixed after the run corrects it without paying for the
trials again. Each trial directory's raw.jsonl.gz is read and its trajectory.json rewritten;
the latest record of each trial in observations.jsonl gets the rebuilt figures, the file
replaced atomically. A trial without raw evidence (--agentbench-raw-limit 0, an older run)
keeps what it had.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pytest_agentbench.run.store import (
    OBSERVATIONS_FILE,
    cell_key,
    read_observations,
    read_run_file,
    write_atomic,
)
from pytest_agentbench.tasks.observation import Observation
from pytest_agentbench.trajectory.raw import ARCHIVE, read_archive
from pytest_agentbench.trajectory.summary import TRAJECTORY_FILE, atif_text, summarise
from pytest_agentbench.trial.artifacts import TRIALS_DIR, trial_dir_name


@dataclass
class Retraced:
    """What a retrace did: trials rebuilt, and those left as they were for want of evidence."""

    rebuilt: list[str] = field(default_factory=list)
    without_evidence: list[str] = field(default_factory=list)


def trial_directory(run_dir: Path, observation: Observation) -> Path:
    return run_dir / TRIALS_DIR / trial_dir_name(*cell_key(observation))


def retrace(run_dir: Path) -> Retraced:
    """Rebuild every trial of the run directory that kept raw evidence (see the module)."""
    run = read_run_file(run_dir)
    agent = str((run.get("settings") or {}).get("agent") or "")
    observations, _notice = read_observations(run_dir / OBSERVATIONS_FILE)
    done = Retraced()
    for observation in latest_trials(observations):
        directory = trial_directory(run_dir, observation)
        name = directory.name
        try:
            data = (directory / ARCHIVE).read_bytes()
        except OSError:
            done.without_evidence.append(name)
            continue
        trajectory, block = summarise(agent, read_archive(data))
        observation["trajectory"] = block
        trial = {
            "task": observation["task"],
            "repeat": observation["repeat"],
            "arm": observation.get("arm"),
        }
        write_atomic(directory / TRAJECTORY_FILE, atif_text(trajectory, trial))
        done.rebuilt.append(name)
    rewrite_observations(run_dir, observations)
    return done


def latest_trials(observations: list[Observation]) -> list[Observation]:
    """The latest record of each trial that ran here: not reused from another run's
    directory, and with an agent round, so with a trial folder to read."""
    latest = {cell_key(o): index for index, o in enumerate(observations)}
    chosen = (observations[index] for index in sorted(latest.values()))
    return [o for o in chosen if not o.get("reused") and o["rounds"]]


def rewrite_observations(run_dir: Path, observations: list[Observation]) -> None:
    """observations.jsonl replaced atomically by these records, in their order."""
    lines = "".join(
        json.dumps(o, ensure_ascii=False, separators=(",", ":")) + "\n" for o in observations
    )
    write_atomic(run_dir / OBSERVATIONS_FILE, lines)


def export_atif(run_dir: Path, out_dir: Path) -> int:
    """Copy each trial's trajectory.json to OUT_DIR/<trial>.json (attempts retried after an
    infrastructure failure as <trial>.attempt-N.json); the number of files written."""
    read_run_file(run_dir)  # a run directory, or the error saying it is not one
    out_dir.mkdir(parents=True, exist_ok=True)
    written = 0
    for source in sorted((run_dir / TRIALS_DIR).glob(f"*/{TRAJECTORY_FILE}")) + sorted(
        (run_dir / TRIALS_DIR).glob(f"*/attempt-*/{TRAJECTORY_FILE}")
    ):
        parts = source.relative_to(run_dir / TRIALS_DIR).parts[:-1]
        (out_dir / (".".join(parts) + ".json")).write_bytes(source.read_bytes())
        written += 1
    return written
