"""docs/scaling.md's "An engine over TLS, step by step", run as written: its openssl steps in a
temporary directory, a dockerd started with its daemon.json's TLS settings, its `docker
--tlsverify ... version` check, and a trial through its `--docker-host tcp://...?tls=DIR`.
The doc's placeholders are replaced: build-7 by localhost, 10.0.0.7 by 127.0.0.1, port 2376 by
a free one, ~/docker-tls and /etc/docker/ by directories of the test's (no sudo)."""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import subprocess
import uuid
from pathlib import Path

import pytest
from docker_engines import DaemonTls, second_engine
from ssh_engine import ssh_engine, why_no_sshd

from conftest import TEST_IMAGE, simple_tasks, skip_unless_sandbox

pytestmark = pytest.mark.real

DOC = Path(__file__).resolve().parent.parent / "docs" / "scaling.md"


def _section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"### {title}")
    return text[start : text.index("\n### ", start + 1)]


def test_the_tls_walk_through_runs_as_written(pytester: pytest.Pytester) -> None:
    skip_unless_sandbox("docker")
    section = _section("An engine over TLS, step by step")
    blocks = dict(re.findall(r"```(sh|json)\n(.*?)```", section, re.S))
    steps = blocks["sh"].replace("build-7", "localhost").replace("10.0.0.7", "127.0.0.1")
    steps = steps.replace("~/docker-tls", str(pytester.path / "docker-tls"))
    etc = pytester.path / "etc-docker"
    etc.mkdir()
    steps = steps.replace("sudo install", "install").replace("/etc/docker/", f"{etc}/")
    made = subprocess.run(["bash", "-euo", "pipefail", "-c", steps], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr[-3000:]
    daemon = json.loads(blocks["json"].replace("/etc/docker/", f"{etc}/"))
    assert daemon.pop("hosts") == ["unix:///var/run/docker.sock", "tcp://0.0.0.0:2376"]
    # "copy ca.pem, cert.pem and key.pem (the client's) to the pytest machine, into certs/build-7/"
    certs = pytester.path / "certs" / "localhost"
    certs.mkdir(parents=True)
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (certs / name).write_bytes((pytester.path / "docker-tls" / name).read_bytes())
    with contextlib.ExitStack() as stack:
        try:
            engine = stack.enter_context(second_engine(TEST_IMAGE, tls=DaemonTls(daemon, certs)))
        except RuntimeError as error:
            pytest.skip(f"no second Docker engine: {error}")

        def placed(text: str) -> str:
            return text.replace("build-7:2376", f"localhost:{engine.port}").replace(
                "build-7", "localhost"
            )

        (check,) = re.findall(r"`(docker --tlsverify[^`]*)`", section)
        checked = subprocess.run(
            shlex.split(placed(check)), cwd=pytester.path, capture_output=True, text=True
        )
        assert checked.returncode == 0 and "Server:" in checked.stdout, checked.stderr
        (url,) = re.findall(r"The URL is then\s+`([^`]*)`", section)
        tasks = simple_tasks(pytester.path / "tasks" / f"tls-{uuid.uuid4().hex[:6]}", 1)
        result = pytester.runpytest_subprocess(
            "-p",
            "no:cacheprovider",
            "--agent=command",
            "--agent-cmd=sed -i s/0/1/ a.txt",
            "--sandbox=docker",
            f"--docker-image={TEST_IMAGE}",
            f"--docker-host={placed(url)}",  # its tls DIR relative, taken from where pytest runs
            f"--tasks={tasks}",
            "--agentbench-json=report.json",
            timeout=120,
        )
        result.assert_outcomes(passed=1)
        (obs,) = json.loads((pytester.path / "report.json").read_text())["observations"]
        assert obs["engine"] == f"tcp://localhost:{engine.port}" and obs["final_exact"] is True


def test_the_ssh_walk_through_checks_the_engine_as_written(pytester: pytest.Pytester) -> None:
    """Its check, `docker -H ssh://runner@build-8 version`, through an sshd of the test's own
    (the key made and authorized by the test, as its step 2 has you do) to this machine's
    engine; the --docker-host URL it names then answers `agentbench clean`."""
    skip_unless_sandbox("docker")
    why = why_no_sshd()
    if why:
        pytest.skip(why)
    section = _section("An engine over SSH, step by step")
    (check,) = re.findall(r"Check: `([^`]*)`", section)
    (url,) = re.findall(r"The URL is `([^`]*)`", section)
    with ssh_engine("unix:///var/run/docker.sock") as ssh:
        login = f"{ssh.user}@localhost:{ssh.port}"
        checked = subprocess.run(
            shlex.split(check.replace("runner@build-8", login)),
            env=ssh.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert checked.returncode == 0 and "Server:" in checked.stdout, checked.stderr
        cleaned = subprocess.run(
            [
                "agentbench",
                "clean",
                "--dry-run",
                f"--docker-host={url.replace('runner@build-8', login)}",
            ],
            env=ssh.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert cleaned.returncode == 0, cleaned.stderr
        assert f"that are gone on ssh://{login}" in cleaned.stdout, cleaned.stdout
