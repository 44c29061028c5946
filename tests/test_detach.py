"""Long studies left alone: --agentbench-detach, run.lock, `agentbench stop`, and what
`agentbench status` says of a run that is stopping, per arm and per task."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tiny_tasks import TINY_RUN, slow_suite

from pytest_agentbench.commands.status import render, status
from pytest_agentbench.run.lock import holder
from pytest_agentbench.run.store import read_observations

DIST = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
SLOW = {**os.environ, "AGENTBENCH_TEST_DELAY": "0.4"}


def agentbench(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["agentbench", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def pytest_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", *TINY_RUN, *args]


def wait_for(condition, what: str, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def ends(run: Path) -> list[dict]:
    lines = (run / "progress.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if '"end"' in line]


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a parent that is gone to reap it has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@DIST
def test_a_detached_run_outlives_its_terminal_stops_gracefully_and_resumes(
    pytester: pytest.Pytester, dist: list[str]
) -> None:
    slow_suite(pytester)
    run = pytester.path / "run"
    # A terminal: a session whose leader stays after the command, then hangs up.
    command = " ".join([*pytest_command("--agentbench-dir=run", *dist), "--agentbench-detach"])
    terminal = subprocess.Popen(
        ["sh", "-c", f"{command}; echo started=$?; sleep 60"],
        cwd=pytester.path,
        env=SLOW,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # A hangup ends a terminal's processes only where it is not ignored: a test run started
        # under nohup would hand its SIG_IGN down, and prove nothing.
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    assert terminal.stdout is not None
    said = []
    while not (said and said[-1].startswith("started=")):
        said.append(terminal.stdout.readline().rstrip("\n"))
    assert said[-1] == "started=0", said
    assert any(line.strip() == "watch it:    agentbench status run --watch" for line in said)
    held = holder(run)
    assert held is not None and held["detached"] and held["pgid"] == held["pid"]
    os.killpg(terminal.pid, signal.SIGHUP)
    terminal.wait(timeout=30)
    terminal.stdout.close()
    assert alive(held["pid"]), "the run died with its terminal"

    wait_for(lambda: (run / "progress.jsonl").exists() and len(ends(run)) >= 2, "no trial ended")
    stopped = agentbench(pytester.path, "stop", "run", "--timeout=90")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert "the run has ended" in stopped.stdout
    assert holder(run) is None
    wait_for(lambda: not alive(held["pid"]), "the run's process outlived its lock", 10)
    recorded, notice = read_observations(run / "observations.jsonl")
    assert notice is None
    statuses = [o["status"] for o in recorded]
    assert "scored" in statuses and set(statuses) <= {"scored", "interrupted"}
    # Every trial that started finished and was recorded: the stop started none after it.
    progress = [json.loads(line) for line in (run / "progress.jsonl").read_text().splitlines()]
    started = {line["start"] for line in progress if "start" in line}
    finished = {line["end"] for line in progress if line.get("status") == "scored"}
    assert started == finished and len(finished) == statuses.count("scored")
    assert any("stopping" in line and "SIGTERM" in line["reason"] for line in progress)
    assert "SIGTERM" in (run / "run.log").read_text()
    doc = json.loads(agentbench(pytester.path, "status", "run", "--json").stdout)
    assert doc["state"] == "interrupted"

    resumed = subprocess.run(
        pytest_command("--agentbench-resume=run", *dist), cwd=pytester.path, capture_output=True
    )
    assert resumed.returncode in (0, 1), resumed.stdout[-2000:]
    recorded, _ = read_observations(run / "observations.jsonl")
    assert len(recorded) == 24 and {o["status"] for o in recorded} == {"scored"}


def test_a_directory_another_run_writes_is_refused_and_stop_then_frees_it(
    pytester: pytest.Pytester,
) -> None:
    slow_suite(pytester)
    started = subprocess.run(
        pytest_command("--agentbench-dir=run", "--agentbench-detach"),
        cwd=pytester.path,
        env=SLOW,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode == 0, started.stderr
    second = subprocess.run(
        pytest_command("--agentbench-dir=run"), cwd=pytester.path, capture_output=True, text=True
    )
    assert second.returncode == 4
    held = holder(pytester.path / "run")
    assert held is not None
    assert f"is in use by pid {held['pid']}" in second.stderr
    assert "agentbench stop" in second.stderr
    stopped = agentbench(pytester.path, "stop", "run", "--no-wait")
    assert stopped.returncode == 0 and "SIGTERM sent" in stopped.stdout
    wait_for(lambda: holder(pytester.path / "run") is None, "the run never ended")
    again = agentbench(pytester.path, "stop", "run")
    assert again.returncode == 1 and "nothing to stop" in again.stdout


def test_a_detached_run_that_cannot_start_says_why_where_it_was_typed(
    pytester: pytest.Pytester,
) -> None:
    slow_suite(pytester)
    started = subprocess.run(
        pytest_command("--agentbench-dir=run", "--agentbench-detach", "--repeats=lots"),
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode == 4
    assert "--repeats" in started.stderr and "ended before it started" in started.stderr
    assert not (pytester.path / "run").exists()
    bare = subprocess.run(
        [sys.executable, "-m", "pytest", "--agentbench-detach"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
    )
    assert bare.returncode == 4 and "give --agent" in bare.stderr


def test_status_of_a_stopping_run_with_arms_per_arm_and_per_task(arm_run: Path) -> None:
    """A run whose gate has closed while its controller lives: `stopping`, not `running`."""
    progress = arm_run / "progress.jsonl"
    lines = [json.loads(line) for line in progress.read_text().splitlines()]
    kept = [line for line in lines if "finished" not in line]
    kept[0]["pid"] = os.getpid()  # the controller: this live process
    kept.append({"stopping": "interrupt", "reason": "SIGTERM: no new trial started"})
    progress.write_text("".join(json.dumps(line) + "\n" for line in kept))
    doc = status(arm_run)
    assert doc["state"] == "stopping"
    assert doc["stopped"] == {"by": "interrupt", "reason": "SIGTERM: no new trial started"}
    recorded, _ = read_observations(arm_run / "observations.jsonl")
    for arm in ("vanilla", "core"):
        own = [o for o in recorded if o["arm"] == arm]
        assert doc["arms"][arm]["recorded"] == {"scored": len(own)}
        assert doc["arms"][arm]["first_exact"] == sum(o["first_exact"] for o in own)
    assert doc["arms"]["vanilla"]["first_exact"] == doc["arms"]["vanilla"]["scored"] == 2
    assert doc["arms"]["core"]["first_exact"] == 0
    assert set(doc["tasks"]) == {f"{arm}::t0{i}" for arm in ("vanilla", "core") for i in (0, 1)}
    text = render(doc, tasks=True)
    assert "stopping (SIGTERM: no new trial started): the trials running are the last" in text
    assert "  vanilla: 2 done, first exact 2/2 scored" in text
    assert "  core::t01: 1 done, first exact 0/1 scored" in text
