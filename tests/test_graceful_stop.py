"""Stopping a run by signal: the first lets the trials in flight finish and be recorded, the
second stops at once; the printed command resumes it alone; `agentbench status` says so."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tiny_tasks import make_tasks

from pytest_agentbench.fs.wording import plural
from pytest_agentbench.run.store import read_observations

from conftest import BACKGROUND_RUNS

DIST = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
TASKS = 3
REPEATS = 2


def slow_run(agent_cmd: str) -> list[str]:
    """A run of the tiny tasks by a command agent that takes its time."""
    return [
        "-p",
        "no:randomly",
        "--agent=command",
        f"--agent-cmd={agent_cmd}",
        "--sandbox=tmp",
        "--tasks=tiny-tasks",
        f"--repeats={REPEATS}",
        "--agentbench-dir=run",
    ]


SOLVES_SLOWLY = slow_run("sleep 0.8; sed -i s/draft/final/ notes.txt")


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    make_tasks(pytester.path, TASKS)
    return pytester.path


def start(cwd: Path, *args: str) -> subprocess.Popen[str]:
    """pytest in a process group of its own, as a terminal runs it (Ctrl-C signals the group)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    BACKGROUND_RUNS.append(process)
    return process


def progress(run: Path) -> list[dict]:
    path = run / "progress.jsonl"
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.endswith("}")]


def running(run: Path, for_at_least: float) -> set[str]:
    """Node ids of the trials started at least that many seconds ago and not ended."""
    started = {}
    for line in progress(run):
        if "start" in line:
            started[line["start"]] = line["t"]
        elif "end" in line:
            started.pop(line["end"], None)
    return {nodeid for nodeid, t in started.items() if time.time() - t >= for_at_least}


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def finish(process: subprocess.Popen[str]) -> str:
    """The run's output once it has ended; whatever it left behind is killed."""
    try:
        output, _ = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    return output


def recorded(run: Path) -> list[dict]:
    observations, notice = read_observations(run / "observations.jsonl")
    assert notice is None
    return observations


def status(cwd: Path) -> dict:
    shown = subprocess.run(
        [sys.executable, "-m", "pytest_agentbench.cli", "status", "run", "--json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def resume_command(output: str) -> list[str]:
    """The command the summary ends with, as a shell would split it."""
    lines = [line for line in output.splitlines() if line.startswith("continue with: ")]
    assert len(lines) == 1, output
    argv = shlex.split(lines[0].removeprefix("continue with: "))
    assert argv[0] == "pytest"
    return [sys.executable, "-m", *argv]


@DIST
def test_a_first_signal_keeps_the_trials_in_flight_and_the_printed_command_resumes(
    project: Path, dist: list[str]
) -> None:
    process = start(project, *SOLVES_SLOWLY, *dist)
    wait_for(lambda: running(project / "run", 0.3))
    in_flight = running(project / "run", 0)
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C
    output = finish(process)

    assert process.returncode == pytest.ExitCode.INTERRUPTED
    assert "SIGINT: no new trial starts; the trials running finish and are recorded" in output
    observations = recorded(project / "run")
    nodeids = {f"tiny-tasks/{o['task']}::r{o['repeat']}" for o in observations}
    assert in_flight <= nodeids, "every trial running at the signal is recorded"
    assert all(o["status"] == "scored" for o in observations)
    assert len(observations) < TASKS * REPEATS
    observed = len({o["task"] for o in observations})
    assert f"coverage {100 * observed / TASKS:.1f}% ({observed} of {TASKS} declared tasks)" in (
        output
    )
    run = json.loads((project / "run" / "run.json").read_text())
    assert run["stopped"] == {"by": "interrupt", "reason": "SIGINT: no new trial started"}
    assert status(project)["state"] == "interrupted"
    assert not list((project / "run").glob(".stop-*"))

    command = resume_command(output)
    assert command[3:] == ["-p", "no:randomly", *dist, "--agentbench-resume", "run"]
    resumed = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stdout
    assert f"agentbench resume: {plural(len(observations), 'trial')} reused" in resumed.stdout
    cells = {(o["task"], o["repeat"]) for o in recorded(project / "run")}
    assert len(cells) == TASKS * REPEATS
    assert status(project)["state"] == "finished"


@DIST
def test_a_second_signal_stops_at_once_and_kills_the_agent(project: Path, dist: list[str]) -> None:
    pids = project / "pids"
    pids.mkdir()
    process = start(project, *slow_run(f"echo $$ > {pids}/$$; exec sleep 60"), *dist)
    wait_for(lambda: running(project / "run", 0.3) and any(pids.iterdir()))
    os.killpg(process.pid, signal.SIGINT)
    time.sleep(0.3)
    os.killpg(process.pid, signal.SIGINT)
    began = time.monotonic()
    output = finish(process)

    assert time.monotonic() - began < 20, "the trials in flight did not wait for their agent"
    assert process.returncode == pytest.ExitCode.INTERRUPTED
    for pid in pids.iterdir():
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid.name), 0)
    assert recorded(project / "run") == []
    run = json.loads((project / "run" / "run.json").read_text())
    assert run["stopped"] == {"by": "interrupt", "reason": "SIGINT: stopped at once"}
    assert status(project)["state"] == "interrupted"
    assert f"(0 of {TASKS} declared tasks)" in output
    assert resume_command(output)[3:] == ["-p", "no:randomly", *dist, "--agentbench-resume", "run"]


def test_a_signal_to_the_controller_alone_stops_the_workers_after_their_trial(
    project: Path,
) -> None:
    process = start(project, *SOLVES_SLOWLY, "-n", "2")
    wait_for(lambda: running(project / "run", 0.3))
    in_flight = running(project / "run", 0)
    process.send_signal(signal.SIGTERM)  # as a CI runner stops a job
    output = finish(process)

    assert process.returncode == pytest.ExitCode.INTERRUPTED
    observations = recorded(project / "run")
    scored = {
        f"tiny-tasks/{o['task']}::r{o['repeat']}" for o in observations if o["status"] == "scored"
    }
    assert in_flight <= scored
    not_started = [o for o in observations if o["status"] != "scored"]
    # A worker reads the stop before its next trial: each skips at most that one.
    assert len(not_started) <= 2 and all(o["status"] == "interrupted" for o in not_started)
    assert len(observations) < TASKS * REPEATS
    assert status(project)["state"] == "interrupted"
    assert "continue with: pytest -p no:randomly -n 2 --agentbench-resume run" in output
