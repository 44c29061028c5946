"""Every sandbox works, or fails with one clear usage error, for an ordinary (non-root) user.

Run as root, these tests start their child runs as the ordinary user .ci/install-user.sh
creates (without its extra groups, so outside the docker group); run as that user (CI's second
pass), as the user itself.
"""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.fs.fdtree import remove_tree

from conftest import skip_unless_sandbox, write_task

pytestmark = pytest.mark.real

TEST_USER = os.environ.get("AGENTBENCH_TEST_USER", "agentbench-user")
CHECKOUT = str(Path(__file__).resolve().parents[1])


def _as_ordinary_user() -> dict[str, Any]:
    """subprocess arguments that run a child as an ordinary user, with no extra groups."""
    if os.getuid():
        return {}
    try:
        entry = pwd.getpwnam(TEST_USER)
    except KeyError:
        pytest.skip(f"no user {TEST_USER} to run as; .ci/install-user.sh creates it")
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory the ordinary user owns (tmp_path's parents are private to root)."""
    user = _as_ordinary_user()
    path = Path(tempfile.mkdtemp(prefix="ordinary-user-test-", dir="/tmp"))
    if user:
        os.chown(path, user["user"], user["group"])
    yield path
    assert remove_tree(str(path)) == []


def _run(argv: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **extra,
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        "TMPDIR": str(cwd),
        "PYTHONPATH": CHECKOUT,
        "LANG": "C.UTF-8",
    }
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        **_as_ordinary_user(),
    )


def _pytest(cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    (cwd / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n")
    return _run([sys.executable, "-m", "pytest", *args], cwd, **extra)


def test_bwrap_runs_for_an_ordinary_user_and_says_when_limits_are_off(shared_dir: Path) -> None:
    skip_unless_sandbox("bwrap")
    write_task(shared_dir / "suite", "answer", {"a.txt": "a\n"}, {"a.txt": "a\n", "answer": "42\n"})
    probe = _run(
        [
            sys.executable,
            "-c",
            "from pytest_agentbench.sandbox.cgroup import create_trial_cgroup as make\n"
            "made = make(f'agentbench-probe-user-{__import__(\"os\").getpid()}', 8, 1 << 30)\n"
            "print(made is not None)\n"
            "made and made.remove()",
        ],
        shared_dir,
    )
    assert probe.returncode == 0, probe.stderr
    result = _pytest(
        shared_dir,
        "--agent=command",
        "--agent-cmd=echo 42 > answer",
        f"--tasks={shared_dir / 'suite'}",
        "--sandbox=bwrap",
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    limits_off = "agentbench: process limits off (bwrap found no writable cgroup: an ordinary user"
    assert (limits_off in result.stdout) is (probe.stdout.strip() == "False"), result.stdout


def test_docker_out_of_reach_is_one_usage_error_naming_the_group(shared_dir: Path) -> None:
    """As root the child runs outside the docker group against the real socket; as an ordinary
    user, against a socket whose mode keeps its owner out."""
    if os.getuid() == 0:
        skip_unless_sandbox("docker")
        where = "unix:///var/run/docker.sock"
    else:
        path = shared_dir / "docker.sock"
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(path))
        path.chmod(0)
        where = f"unix://{path}"
    write_task(shared_dir / "suite", "t", {"a.txt": "a\n"}, {"a.txt": "b\n"})
    result = _pytest(
        shared_dir,
        "--agent=nop",
        f"--tasks={shared_dir / 'suite'}",
        "--sandbox=docker",
        "--docker-image=agentbench-test:1",
        DOCKER_HOST=where,
    )
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1, result.stderr
    assert f"may not use the Docker engine at {where}" in errors[0]
    assert "group; add the user to it (`sudo usermod -aG" in errors[0]
