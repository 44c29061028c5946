"""The run directory: run.json, observations.jsonl and trials/<task>-r<n>/ artifacts.

One writer, the controller: each Observation is appended and flushed as its report arrives,
with its artifacts, so a killed run loses at most the line being written. The file is fsynced
at most once a second (an fsync waits for the disk: once per trial it cost fast agents more
than the rest of the writing) and at the session's end, so a crash of the machine itself can
lose the lines of the last second. Readers drop a truncated last line with a notice instead
of failing. The latest line of a (task, repeat) cell is the cell's result, the one a resumed
run reuses; every trial stays in the record, a provider stop a later session re-ran included
(see pooling.py for trial ids and how records pool).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.fs.filework import wait_for_file_work, write_later
from pytest_agentbench.fs.wording import quoted
from pytest_agentbench.run.pooling import pool, trial_id, with_trial_ids
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.observation import (
    INFRASTRUCTURE,
    PROVIDER_STOP,
    REPORT_ATTRIBUTE,
    Observation,
    observation_slot_task,
)
from pytest_agentbench.trial.artifacts import REPORT_ATTRIBUTE as ARTIFACTS_ATTRIBUTE
from pytest_agentbench.trial.artifacts import TRIALS_DIR, trial_dir_name

RUN_FILE = "run.json"
OBSERVATIONS_FILE = "observations.jsonl"
SYNC_INTERVAL_S = 1.0  # how much of a run a crash of the machine itself may cost
DEFAULT_ROOT = Path(".agentbench") / "runs"
RUN_SCHEMA_VERSION = 1
RUN_DIR_INPUT = "agentbench_run_dir"  # workerinput key: workers write kept workspaces there


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_run_id() -> str:
    """Sortable by start time, unique across machines of one CI matrix."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def configuration_identity(
    settings: Settings, agent_info: dict[str, Any], sandbox: dict[str, Any]
) -> dict[str, Any]:
    """What decides whether two runs measure the same thing (per-task hashes are kept apart).

    A label counts when one was given (runs named apart stay apart); run ids, timestamps,
    shard, seed and concurrency are deliberately absent; of the sandbox only its kind and
    image count (engine versions and uids vary between machines).
    """
    identity = settings.identity()
    identity["cli_version"] = agent_info.get("cli_version")
    identity["sandbox"] = {"kind": sandbox.get("kind"), "image": sandbox.get("image")}
    result: dict[str, Any] = json.loads(json.dumps(identity))
    return result


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def identity_differences(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """One line per differing field: 'model: recorded 'a', now 'b''."""
    old, new = _flatten(recorded), _flatten(current)
    return [
        f"{key}: recorded {quoted(old.get(key))}, now {quoted(new.get(key))}"
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    ]


def identity_digest(identity: dict[str, Any]) -> str:
    """A name for an identity: equal for two identities exactly when identity_differences
    finds none between them (a field absent and a field null are the same)."""
    fields = {key: value for key, value in _flatten(identity).items() if value is not None}
    text = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def task_hash_differences(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """Tasks present on both sides whose fixture hash changed."""
    return [
        f"task {task_id} fixture_hash: recorded {recorded[task_id][:12]}, "
        f"now {current[task_id][:12]}"
        for task_id in sorted(set(recorded) & set(current))
        if recorded[task_id] != current[task_id]
    ]


def cell_key(observation: Observation) -> tuple[str, int]:
    """A trial's slot: (task, repeat), the task as ARM::TASK in a run with arms."""
    return observation_slot_task(observation), int(observation["repeat"])


def json_error(exc: ValueError) -> str:
    """The short reason of a JSON decoding failure (bad syntax, or bytes that are not UTF-8)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text: byte {exc.start}"
    return str(exc)


def observation_problem(value: Any) -> str | None:
    """Why VALUE cannot be read as an Observation (None when it can): readers key on its cell."""
    if not isinstance(value, dict):
        return f"not an Observation (a JSON object), got {type(value).__name__}"
    if not isinstance(value.get("task"), str) or type(value.get("repeat")) is not int:
        return "not an Observation (no string 'task' and integer 'repeat')"
    return None


def _parse_line(line: bytes) -> tuple[Any, str | None]:
    """One line of observations.jsonl, and what is wrong with it (None when nothing is)."""
    try:
        observation = json.loads(line)
    except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError for non-UTF-8 bytes
        return None, f"not a JSON line ({json_error(exc)})"
    return observation, observation_problem(observation)


BATCH = 1000  # lines parsed as one JSON array: they share their keys' string objects


def _parse_batch(batch: list[tuple[int, bytes]], path: Path) -> list[Observation]:
    """The Observations of numbered lines. Parsed as one array, the lines share one copy of
    each key (json keeps one per document), which holds a large run in a third of the
    memory; a batch that does not parse is read line by line to name the damaged line."""
    try:
        values = json.loads(b"[" + b",".join(line for _, line in batch) + b"]")
    except ValueError:
        values = None
    if not isinstance(values, list) or len(values) != len(batch):  # a line held a comma or ]
        values = None
    observations = []
    for position, (number, line) in enumerate(batch):
        if values is None:
            observation, problem = _parse_line(line)
        else:
            observation = values[position]
            problem = observation_problem(observation)
        if problem is not None:
            raise ValueError(
                f"{path}:{number}: {problem}; the record is damaged, remove or repair that line"
            )
        observations.append(observation)
    return observations


def read_observations(path: Path) -> tuple[list[Observation], str | None]:
    """Every recorded Observation in file order, and a notice when a torn last line was dropped.

    A malformed line anywhere but at the end is damage, not interruption: it is an error.
    """
    if not path.exists():
        return [], None
    notice = None
    observations: list[Observation] = []
    batch: list[tuple[int, bytes]] = []
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.endswith(b"\n"):  # the last line, torn by an interrupted write
                observations += _parse_batch(batch, path)
                batch = []
                observation, problem = _parse_line(line) if line.strip() else (None, None)
                if problem is None and observation is not None:
                    observations.append(observation)
                elif problem is not None:
                    notice = (
                        f"{path}: dropped a truncated last line ({len(line)} bytes) left by an "
                        "interrupted run; that trial runs again"
                    )
                break
            if line.strip():
                batch.append((number, line))
            if len(batch) >= BATCH:
                observations += _parse_batch(batch, path)
                batch = []
    observations += _parse_batch(batch, path)
    return observations, notice


def latest_cells(observations: Iterable[Observation]) -> dict[tuple[str, int], Observation]:
    """The latest Observation of each (task, repeat): a re-run refines its earlier record."""
    cells: dict[tuple[str, int], Observation] = {}
    for observation in observations:
        cells[cell_key(observation)] = observation
    return cells


@dataclass
class RunRecord:
    """A run directory as read back: run.json, the latest Observation of every cell, and every
    trial it holds (provider stops a later session re-ran included: see pooling.py)."""

    path: Path
    run: dict[str, Any]
    observations: list[Observation]
    notice: str | None = None
    trials: list[Observation] = field(default_factory=list)
    executions: Counter[tuple[str, int]] = field(default_factory=Counter)  # records per cell

    @property
    def run_id(self) -> str:
        """The run's id (a record written without one is known by its directory's name)."""
        return str(self.run.get("run_id") or self.path.name)

    @property
    def identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = self.run.get("identity") or {}
        return identity

    def task_hashes(self) -> dict[str, str]:
        hashes = {
            task_id: meta["fixture_hash"]
            for task_id, meta in (self.run.get("tasks") or {}).items()
            if meta.get("fixture_hash")
        }
        for observation in self.observations:
            if observation.get("fixture_hash"):
                hashes[observation["task"]] = observation["fixture_hash"]
        return hashes


def stops_of(record: RunRecord) -> list[Observation]:
    """The provider stops and infrastructure failures a run record holds: evidence that
    outlives their re-run."""
    return [o for o in record.trials if o["status"] in (PROVIDER_STOP, INFRASTRUCTURE)]


def read_run_file(path: Path) -> dict[str, Any]:
    """The run.json of a run directory; ValueError saying what is wrong when there is none."""
    run_path = path / RUN_FILE
    if not run_path.is_file():
        raise ValueError(
            f"{path}: not a run directory (no {RUN_FILE}); give a directory written by "
            "pytest --agentbench-dir"
        )
    try:
        run = json.loads(run_path.read_text(encoding="utf-8"))
    except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError for non-UTF-8 bytes
        raise ValueError(f"{run_path}: not valid JSON ({json_error(exc)})") from None
    if not isinstance(run, dict):
        raise ValueError(f"{run_path}: not a run record (a JSON object), got {type(run).__name__}")
    return run


def read_run_directory(path: Path) -> RunRecord:
    run = read_run_file(path)
    observations, notice = read_observations(path / OBSERVATIONS_FILE)
    record = RunRecord(path, run, [], notice)
    observations = with_trial_ids(observations, record.run_id)
    record.executions = Counter(cell_key(o) for o in observations)
    record.observations = list(latest_cells(observations).values())
    record.trials = pool(observations)
    return record


def write_atomic(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def _drop_torn_tail(path: Path) -> None:
    """Cut a truncated last line before appending, so new lines start on a line of their own."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


class RunWriter:
    """Controller-only plugin: the single writer of the run directory.

    The directory is made when the first trial starts: a run that fails to collect, selects
    nothing (-k nomatch) or only lists (--collect-only) leaves no directory behind.
    """

    def __init__(
        self,
        settings: Settings,
        directory: Path,
        identity: dict[str, Any],
        agent_info: dict[str, Any],
        sandbox: dict[str, Any],
        shard: str | None,
        resumed: RunRecord | None,
        run_id: str,
    ) -> None:
        self.directory = directory
        self.settings = settings
        self.identity = identity
        self.resumed = resumed
        same_dir = resumed is not None and resumed.path.resolve() == directory.resolve()
        previous = resumed.run if same_dir and resumed is not None else {}
        self.run: dict[str, Any] = {
            "schema_version": RUN_SCHEMA_VERSION,
            "run_id": previous.get("run_id") or run_id,
            "identity": identity,
            "settings": settings.to_json(),
            "agent_info": agent_info,
            "sandbox": sandbox,
            "shard": shard,
            "started_at": previous.get("started_at") or now(),
            "finished_at": None,
            "sessions": [*previous.get("sessions", []), now()],
            "resumed_from": str(resumed.path) if resumed is not None else None,
            "tasks": dict(previous.get("tasks") or {}),  # the declared tasks
            "tasks_selected": list(previous.get("tasks_selected") or []),
        }
        # Each execution of a cell gets the next attempt number of the run (see pooling.py).
        self.executions = Counter(resumed.executions if same_dir and resumed else {})
        # Provider stops of the resumed record stay evidence of a run recorded elsewhere.
        self.carried = [] if same_dir or resumed is None else stops_of(resumed)
        self.opened = False  # whether this session made (or reopened) the directory
        self.observations: Any = None  # the open observations.jsonl, during the session
        self.artifact_failures: list[str] = []  # artifact files that could not be written
        self.synced_at = time.monotonic()

    @property
    def observations_path(self) -> Path:
        return self.directory / OBSERVATIONS_FILE

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[RUN_DIR_INPUT] = str(self.directory)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        """The first trial to start opens the directory (under xdist too: workers relay it)."""
        if self.opened:
            return
        self.opened = True
        (self.directory / TRIALS_DIR).mkdir(parents=True, exist_ok=True)
        _drop_torn_tail(self.observations_path)
        write_atomic(self.directory / RUN_FILE, json.dumps(self.run, indent=1) + "\n")
        self.observations = open(self.observations_path, "a", encoding="utf-8")  # noqa: SIM115
        for stop in self.carried:
            self._append(stop)

    @pytest.hookimpl(tryfirst=True, specname="pytest_runtest_logreport")
    def pytest_runtest_logreport_name(self, report: pytest.TestReport) -> None:
        """Give a trial this run executed its id and node id before anyone reads it (reused
        ones keep theirs)."""
        observation = getattr(report, REPORT_ATTRIBUTE, None)
        if observation is None or "trial_id" in observation:
            return
        cell = cell_key(observation)
        observation["trial_id"] = trial_id(self.run["run_id"], *cell, self.executions[cell])
        observation["nodeid"] = report.nodeid
        self.executions[cell] += 1

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        observation = getattr(report, REPORT_ATTRIBUTE, None)
        if observation is None or self.observations is None:
            return
        if observation.get("reused") and self._own(observation["reused"]):
            return  # a trial of this directory's own record: it is there already
        self._append(observation)
        if time.monotonic() - self.synced_at >= SYNC_INTERVAL_S:
            self._sync()
        artifacts = getattr(report, ARTIFACTS_ATTRIBUTE, None)
        if artifacts:
            self._write_artifacts(*cell_key(observation), artifacts)
            # Written: the report (which pytest keeps to the end) lets go of the raw evidence.
            setattr(report, ARTIFACTS_ATTRIBUTE, None)

    def _own(self, directory: str) -> bool:
        return Path(directory).resolve() == self.directory.resolve()

    def _append(self, observation: Observation) -> None:
        record = {k: v for k, v in observation.items() if k != "reused"}
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        self.observations.write(line)
        self.observations.flush()

    def _sync(self) -> None:
        os.fsync(self.observations.fileno())
        self.synced_at = time.monotonic()

    def _write_artifacts(
        self, task_id: str, repeat: int, artifacts: dict[str, str | bytes]
    ) -> None:
        """Handed to the file helper: the observation line is what must not wait."""
        trial_dir = self.directory / TRIALS_DIR / trial_dir_name(task_id, repeat)
        for name, text in artifacts.items():
            # A file name, or attempt-N/NAME for an attempt retried after an infrastructure
            # failure; never more, whatever a report carries.
            data = text.encode() if isinstance(text, str) else text
            write_later(trial_dir.joinpath(*Path(name).parts[-2:]), data)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Every line fsynced before the report and run.json."""
        if self.observations is None:
            return
        try:
            self._sync()
        finally:
            self.observations.close()
            self.observations = None
            self.artifact_failures = wait_for_file_work()

    @pytest.hookimpl
    def pytest_agentbench_report_json(self, config: pytest.Config, report: dict[str, Any]) -> None:
        """Name the run directory in the report and complete run.json with the declared tasks."""
        report["run"].update(
            run_id=self.run["run_id"],
            run_dir=str(self.directory) if self.opened else None,
            identity=self.identity,
            settings=self.run["settings"],
            shard=self.run["shard"],
        )
        if not self.opened:
            return
        selected = set(self.run["tasks_selected"]) | set(report["run"]["tasks_selected"] or ())
        self.run["tasks_selected"] = sorted(selected)
        for task in report["tasks"]:
            self.run["tasks"][task["id"]] = {
                "category": task.get("category", ""),
                "tags": task.get("tags", []),
                "fixture_hash": task.get("fixture_hash"),
            }
        self.run["finished_at"] = now()
        write_atomic(self.directory / RUN_FILE, json.dumps(self.run, indent=1) + "\n")

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.opened:
            terminalreporter.write_line(f"agentbench run directory: {self.directory}")
        for failure in self.artifact_failures:
            terminalreporter.write_line(f"agentbench artifacts: {failure}", red=True)
