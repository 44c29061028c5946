"""A run killed outright leaves its trial directories; the next run or `agentbench clean` removes
them, and only them: never a live run's, never anything it did not make.

Real processes throughout: runs are started as subprocesses, one is killed with SIGKILL in the
middle of its trial, another is kept alive (its agent waits for a file) while the cleanup runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_agentbench.sandbox.ownership import (
    MEMORY_ROOT,
    OWNER_FILE,
    OWNER_PREFIX,
    owned_directories,
    owner_token,
)

from conftest import skip_unless_sandbox

HOLD = (
    "touch started; echo $$ > agent.pid; until [ -e release ]; do sleep 0.05; done; "
    "rm started agent.pid release"
)
START_WAIT_S = 60


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def _suite(root: Path) -> Path:
    task = root / "suite" / "hold"
    (task / "workspace").mkdir(parents=True)
    (task / "expected").mkdir()
    (task / "workspace" / "a.txt").write_text("a\n")
    (task / "expected" / "a.txt").write_text("a\n")
    (task / "task.toml").write_text('prompt = "wait"\ntimeout = 120\n')
    return task.parent


def _env(tmpdir: Path) -> dict[str, str]:
    checkout = str(Path(__file__).resolve().parents[1])
    pythonpath = os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")]))
    return {**os.environ, "TMPDIR": str(tmpdir), "PYTHONPATH": pythonpath}


def _start_run(cwd: Path, tmpdir: Path, suite: Path, kind: str, name: str) -> subprocess.Popen:
    with (cwd / f"{name}.log").open("wb") as log:  # the child keeps its own descriptor
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "--agent=command",
                f"--agent-cmd={HOLD}",
                f"--tasks={suite}",
                f"--sandbox={kind}",
                "--agentbench-dir",
                str(cwd / f"{name}-runs"),
            ],
            cwd=cwd,
            env=_env(tmpdir),
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def _workspace_of(process: subprocess.Popen, tmpdir: Path, log: Path) -> Path:
    """The workspace of the run's trial, once its agent has started."""
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the run ended early: {log.read_text()[-3000:]}"
        for owned in owned_directories(tmpdir):
            if owned.owner == owner_token(process.pid):
                started = list(owned.path.glob("agentbench-hold-*/workspace/started"))
                if started and (started[0].parent / "agent.pid").exists():
                    return started[0].parent
        time.sleep(0.05)
    raise AssertionError(f"the trial never started: {log.read_text()[-3000:]}")


def _owned_by(pid: int, roots: list[Path]) -> list[Path]:
    token = owner_token(pid)
    return [
        owned.path for root in roots for owned in owned_directories(root) if owned.owner == token
    ]


def _decoys(tmpdir: Path) -> list[Path]:
    """Entries the cleanup must leave alone: no record, not a directory, a symlink, another
    host's owner, a live owner."""
    dead = _dead_pid()
    no_record = tmpdir / f"{OWNER_PREFIX}norecord"
    no_record.mkdir()
    a_file = tmpdir / f"{OWNER_PREFIX}file"
    a_file.write_text(f"x:{dead}:1\n")
    target = tmpdir / "elsewhere"
    target.mkdir()
    (target / OWNER_FILE).write_text(f"{owner_token().split(':')[0]}:{dead}:1\n")
    link = tmpdir / f"{OWNER_PREFIX}link"
    link.symlink_to(target)
    other_host = tmpdir / f"{OWNER_PREFIX}otherhost"
    other_host.mkdir()
    (other_host / OWNER_FILE).write_text(f"another-host:{dead}:1\n")
    alive = tmpdir / f"{OWNER_PREFIX}alive"
    alive.mkdir()
    (alive / OWNER_FILE).write_text(owner_token(os.getpid()) + "\n")
    return [no_record, a_file, target, link, other_host, alive]


def _clean(cwd: Path, tmpdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_agentbench.cli", "clean", *args, str(tmpdir), MEMORY_ROOT],
        cwd=cwd,
        env=_env(tmpdir),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# Its killed runs leave owner directories in /dev/shm on purpose: never beside the hostile-agent
# run, which checks that nothing is left there (`--dist loadgroup` keeps them on one worker).
@pytest.mark.xdist_group("memory-root")
@pytest.mark.parametrize("how", ["next-run", "clean"])
@pytest.mark.parametrize("kind", ["tmp", pytest.param("bwrap", marks=pytest.mark.real)])
def test_killed_runs_directories_go_live_runs_stay(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, kind: str, how: str
) -> None:
    skip_unless_sandbox(kind)
    cwd = pytester.path
    tmpdir = cwd / "tmproot"
    tmpdir.mkdir()
    suite = _suite(cwd)
    decoys = _decoys(tmpdir)
    roots = [tmpdir, Path(MEMORY_ROOT)]
    live = _start_run(cwd, tmpdir, suite, kind, "live")
    killed = _start_run(cwd, tmpdir, suite, kind, "killed")
    orphans: list[int] = []
    try:
        live_workspace = _workspace_of(live, tmpdir, cwd / "live.log")
        killed_workspace = _workspace_of(killed, tmpdir, cwd / "killed.log")
        orphans.append(int((killed_workspace / "agent.pid").read_text()))
        killed_dirs = _owned_by(killed.pid, roots)
        live_dirs = _owned_by(live.pid, roots)
        # The trial directory, and the agent's home in memory when there is room for it.
        assert len(killed_dirs) == len(live_dirs) >= 1
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        # Any agentbench process sweeps /dev/shm too: only the private root stays as it is.
        private = [path for path in killed_dirs if path.parent == tmpdir]
        assert private and all(path.exists() for path in private), "SIGKILL runs no cleanup"
        if how == "clean":
            dry = _clean(cwd, tmpdir, "--dry-run")
            assert dry.returncode == 0, dry.stderr
            for path in private:
                assert f"would remove {path}" in dry.stdout
                assert path.exists()
            done = _clean(cwd, tmpdir)
            assert done.returncode == 0, done.stdout + done.stderr
            assert f"kept {live_dirs[0]}" in done.stdout
        else:
            monkeypatch.setenv("TMPDIR", str(tmpdir))
            nxt = pytester.runpytest_subprocess(
                "--agent=nop", f"--tasks={suite}", f"--sandbox={kind}", timeout=120
            )
            nxt.assert_outcomes(passed=1)  # nop leaves a.txt as it was, as the task wants
        assert not any(path.exists() for path in killed_dirs)
        assert all(path.exists() for path in live_dirs), "a live run's directories stay"
        assert all(os.path.lexists(path) for path in decoys), "nothing the harness did not make"
        (live_workspace / "release").touch()
        assert live.wait(timeout=120) == 0, (cwd / "live.log").read_text()[-3000:]
        assert not any(path.exists() for path in live_dirs), "a finished run removes its own"
    finally:
        for process in (live, killed):
            if process.poll() is None:
                process.kill()
                process.wait()
        for pid in orphans if kind == "tmp" else ():  # tmp: the agent outlives a killed run
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
