"""An adversarial command agent tries to break out of each sandbox, for real.

It tries to read the task's verifier and a sibling task's expected tree, a secret file in the
operator's home, other trials' homes and a secret environment variable, to write outside its
workspace, to leave a process running after the trial, to fork without bound and to take more
memory than allowed. Under bwrap and docker every attempt must fail or be contained; under tmp
the same tests assert the leaks, so what the docs say about tmp stays true. Each trial must
still be graded normally.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.sandbox import home_parent
from pytest_agentbench.sandbox.bwrap import BwrapProvider
from pytest_agentbench.settings import SandboxLimits

from conftest import TEST_IMAGE, our_containers, skip_unless_sandbox

pytestmark = pytest.mark.real

SECRET_ENV = "AGENTBENCH_TEST_SECRET_ENV"
SECRET_VALUE = "env-secret-7f3a"
HOME_SECRET = "home-secret-91bd"
EXPECTED_SECRET = "expected-secret-2c44"
PIDS_LIMIT = 64
FORK_ATTEMPTS = 150  # bounded: more than the limit, harmless where nothing limits it
MEMORY_LIMIT = "256m"
MEMORY_ATTEMPT_MB = 400
PYTHONPATH = os.environ.get("PYTHONPATH")


ADVERSARY = r"""
import json, os, subprocess, sys, time
paths = json.loads(ADVERSARY_PATHS)
found = {}

def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError as exc:
        return None

found["expected"] = read(paths["expected"])
found["verifier"] = read(paths["verifier"])
found["home_secret"] = read(paths["home_secret"])
found["env"] = os.environ.get(paths["secret_env"])
found["shared_homes"] = [
    name for name in (os.listdir("/dev/shm") if os.path.isdir("/dev/shm") else [])
    if name.startswith("agentbench-")
]
found["proc_env"] = False
for pid in os.listdir("/proc"):
    if pid.isdigit():
        data = read(f"/proc/{pid}/environ") or ""
        found["proc_env"] = found["proc_env"] or paths["secret_env"] + "=" in data
try:
    with open(paths["outside"], "w") as handle:
        handle.write("escaped")
except OSError:
    pass
subprocess.Popen(
    ["sleep", paths["sleeper"]], start_new_session=True,
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
children = []
for _ in range(paths["fork_attempts"]):
    try:
        children.append(subprocess.Popen(["sleep", "30"], stdin=subprocess.DEVNULL))
    except OSError:
        break
found["forked"] = len(children)
for child in children:
    child.kill()
    child.wait()
hog = "x = bytearray(%d * 1024 * 1024); x[::4096] = b'y' * len(x[::4096])" % paths["memory_mb"]
found["memory_exit"] = subprocess.run([sys.executable, "-c", hog]).returncode
with open("findings.json", "w") as handle:
    json.dump(found, handle)
with open("answer.txt", "w") as handle:
    handle.write("42\n")
"""

VERIFY = """#!/bin/sh
cp findings.json {results}/findings-$$.json
test "$(cat answer.txt)" = 42
"""


def _sleeper_tag() -> str:
    return str(900 + os.getpid() % 97)  # `sleep 9xx`: a process name this test can find


def _running_sleepers(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmdline[:2] == [b"sleep", tag.encode()]:
                found.append(int(entry.name))
    return found


def _make_suite(root: Path, results: Path, adversary_name: str) -> Path:
    suite = root / "suite"
    adversary = suite / adversary_name
    (adversary / "workspace").mkdir(parents=True)
    (adversary / "workspace" / "README").write_text("answer 42 in answer.txt\n")
    (adversary / "task.toml").write_text('prompt = "write 42 into answer.txt"\ntimeout = 60\n')
    verify = adversary / "verify"
    verify.write_text(VERIFY.format(results=results))
    verify.chmod(0o755)
    sibling = suite / "sibling"
    (sibling / "workspace").mkdir(parents=True)
    (sibling / "expected").mkdir()
    (sibling / "workspace" / "a.txt").write_text("a\n")
    (sibling / "expected" / "a.txt").write_text(EXPECTED_SECRET + "\n")
    (sibling / "task.toml").write_text('prompt = "noop"\n')
    return suite


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize("kind", ["tmp", "bwrap", "docker"])
def test_adversarial_agent(pytester: pytest.Pytester, kind: str, dist: list[str]) -> None:
    skip_unless_sandbox(kind)
    limits_hold = kind == "docker" or (
        kind == "bwrap" and BwrapProvider(SandboxLimits(), None).use_cgroups
    )
    root = pytester.path
    results = root / "results"
    results.mkdir()
    adversary_name = f"adversary-{kind}-{'xdist' if dist else 'serial'}"
    suite = _make_suite(root, results, adversary_name)
    home = root / "fakehome"
    home.mkdir()
    (home / "secret.txt").write_text(HOME_SECRET)
    outside = root / "outside.txt"
    tag = _sleeper_tag()
    paths = {
        "expected": str(suite / "sibling" / "expected" / "a.txt"),
        "verifier": str(suite / adversary_name / "verify"),
        "home_secret": str(home / "secret.txt"),
        "secret_env": SECRET_ENV,
        "outside": str(outside),
        "sleeper": tag,
        "fork_attempts": FORK_ATTEMPTS,
        "memory_mb": MEMORY_ATTEMPT_MB,
    }
    script = ADVERSARY.replace("ADVERSARY_PATHS", repr(json.dumps(paths)))
    command = f"python3 - <<'ADVERSARY_EOF'\n{script}\nADVERSARY_EOF"
    pytester.makeini("[pytest]\naddopts = -p no:randomly -p no:cacheprovider\n")
    containers_before = our_containers(adversary_name)
    env_backup = {k: os.environ.get(k) for k in ("HOME", SECRET_ENV)}
    os.environ.update(HOME=str(home), **{SECRET_ENV: SECRET_VALUE})
    try:
        result = pytester.runpytest_subprocess(
            "--agent=command",
            f"--agent-cmd={command}",
            f"--tasks={suite}",
            "-k",
            adversary_name,
            "--repeats=2",
            f"--sandbox={kind}",
            f"--docker-image={TEST_IMAGE}",
            f"--sandbox-pids={PIDS_LIMIT}",
            f"--docker-memory={MEMORY_LIMIT}",
            *dist,
            timeout=300,
        )
    finally:
        for key, value in env_backup.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    survivors = _running_sleepers(tag)
    for pid in survivors:  # tmp leaks them by design; do not leave them to the machine
        os.kill(pid, 9)
    result.assert_outcomes(passed=2)  # graded normally: the verifier accepted answer.txt
    findings = [json.loads(p.read_text()) for p in sorted(results.glob("findings-*.json"))]
    assert len(findings) == 2
    escaped = outside.exists()
    if kind == "tmp":  # what tmp does NOT isolate, asserted so the docs stay honest
        for found in findings:
            assert found["expected"] == EXPECTED_SECRET + "\n"
            assert found["verifier"] is not None
            assert found["home_secret"] == HOME_SECRET
            assert found["proc_env"] is True
            assert bool(found["shared_homes"]) == bool(home_parent("auto"))  # its own at least
            assert found["forked"] == FORK_ATTEMPTS
            assert found["memory_exit"] == 0
        assert escaped
        assert survivors, "a session-detached process outlives a tmp trial"
        return
    for found in findings:
        assert found["expected"] is None
        assert found["verifier"] is None
        assert found["home_secret"] is None
        assert found["env"] is None
        assert found["shared_homes"] == []  # no trial's home, when homes live in memory
        assert found["proc_env"] is False
        if limits_hold:
            assert found["forked"] < PIDS_LIMIT
            assert found["memory_exit"] != 0
        else:  # bwrap without a writable cgroup (an ordinary user): the header says so
            assert found["forked"] == FORK_ATTEMPTS
            assert found["memory_exit"] == 0
    if not limits_hold:
        result.stdout.fnmatch_lines(["agentbench: process limits off (*)*"])
    assert not escaped
    assert survivors == []
    assert our_containers(adversary_name) <= containers_before


def _docker_client():  # type: ignore[no-untyped-def]
    import docker

    return docker.from_env()


@pytest.mark.parametrize("kind", ["bwrap", "docker"])
def test_network_none_cuts_network_host_keeps_it(pytester: pytest.Pytester, kind: str) -> None:
    skip_unless_sandbox(kind)
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    suite = pytester.path / "suite" / "net"
    (suite / "workspace").mkdir(parents=True)
    (suite / "expected").mkdir()
    (suite / "expected" / "ok").write_text("")
    (suite / "task.toml").write_text('prompt = "connect"\ntimeout = 30\n')
    probe = (
        'python3 -c \'import socket; socket.create_connection(("127.0.0.1", '
        f"{port}), timeout=3)' && touch ok"
    )
    outcomes = {}
    try:
        for network in ("host", "none"):
            result = pytester.runpytest_subprocess(
                "--agent=command",
                f"--agent-cmd={probe}",
                f"--tasks={suite.parent}",
                f"--sandbox={kind}",
                f"--docker-image={TEST_IMAGE}",
                f"--agentbench-network={network}",
                timeout=120,
            )
            outcomes[network] = result.parseoutcomes()
    finally:
        server.close()
    assert outcomes["host"].get("passed") == 1
    assert outcomes["none"].get("failed") == 1


@pytest.fixture
def make_labelled() -> Iterator[Callable[[], dict[str, Any]]]:
    """Makes stopped containers labelled as a dead owner's, a live owner's (this process),
    another host's, and one that is not this project's at all; and a snapshot image of each (a
    Harbor trial's kind, `<name>-snapshot`), which carries its container's labels."""
    skip_unless_sandbox("docker")
    from pytest_agentbench.sandbox.docker import LABEL_OWNER, LABEL_SNAPSHOT, owner_token

    client = _docker_client()
    every: list[dict[str, Any]] = []

    def make() -> dict[str, Any]:
        dead = subprocess.Popen(["true"])
        dead.wait()
        dead_owner = owner_token(os.getpid()).replace(f":{os.getpid()}:", f":{dead.pid}:")
        labels = {
            "dead": {LABEL_OWNER: dead_owner},
            "alive": {LABEL_OWNER: owner_token(os.getpid())},
            "elsewhere": {LABEL_OWNER: f"another-host:{dead.pid}:1"},
            "foreign": {"com.example.other": "1"},
        }
        made: dict[str, Any] = {}
        every.append(made)
        # Each snapshot is committed from an unlabelled carrier, which no run reaps, with its
        # owner's labels given to the commit: a dead owner's container may be reaped by another
        # worker's docker run at any moment, so it cannot be the one committed.
        for name, label in labels.items():
            carrier = client.containers.create(TEST_IMAGE, ["true"])
            try:
                snapshot_labels = {**label, LABEL_SNAPSHOT: "1"}
                made[f"{name}-snapshot"] = carrier.commit(conf={"Labels": snapshot_labels})
            finally:
                carrier.remove(force=True)
        for name, label in labels.items():
            made[name] = client.containers.create(TEST_IMAGE, ["true"], labels=label)
        return made

    try:
        yield make
    finally:
        for made in every:
            for name, made_thing in made.items():
                with contextlib.suppress(Exception):
                    if name.endswith("-snapshot"):
                        client.images.remove(made_thing.id, force=True)
                    else:
                        made_thing.remove(force=True)
        client.close()


def _left(made: dict[str, Any]) -> set[str]:
    """Which of the labelled containers and snapshot images still exist."""
    with contextlib.closing(_docker_client()) as client:
        remaining = {c.id for c in client.containers.list(all=True, ignore_removed=True)}
        remaining |= {i.id for i in client.images.list(all=True)}
    return {name for name, thing in made.items() if thing.id in remaining}


def _shown_as(thing: Any) -> str:
    """How clean names a container (its name) or an image (its short id)."""
    return str(getattr(thing, "name", None) or thing.short_id)


KEPT = {"alive", "elsewhere", "foreign", "alive-snapshot", "elsewhere-snapshot", "foreign-snapshot"}


def test_docker_reaps_containers_and_snapshots_of_dead_owners_only(
    make_labelled: Callable[[], dict[str, Any]],
) -> None:
    from pytest_agentbench.sandbox.docker import DockerProvider

    made = make_labelled()
    DockerProvider(SandboxLimits(), TEST_IMAGE).client.close()
    assert _left(made) == KEPT


def test_agentbench_clean_removes_containers_and_snapshots_of_dead_owners_only(
    make_labelled: Callable[[], dict[str, Any]], tmp_path: Path
) -> None:
    """A docker run on another xdist worker may reap the dead owner's things first (every run
    does). The dry run is checked for what is still there after it; the real run must name them
    in one of three fresh attempts, which a real run that never names them cannot pass."""
    clean = [str(Path(sys.executable).parent / "agentbench"), "clean", str(tmp_path)]
    named_by_real_run = False
    for _attempt in range(3):
        made = make_labelled()
        dead, snapshot = made["dead"].name, made["dead-snapshot"].short_id
        dry = subprocess.run([*clean, "--dry-run"], capture_output=True, text=True, timeout=120)
        assert dry.returncode == 0, dry.stdout + dry.stderr
        left = _left(made)
        assert left >= KEPT
        assert ("dead" in left) <= (f"would remove container {dead}" in dry.stdout), dry.stdout
        listed = f"would remove snapshot image {snapshot}" in dry.stdout
        assert ("dead-snapshot" in left) <= listed, dry.stdout
        done = subprocess.run(clean, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert _left(made) == KEPT
        kept_named = [n for n in KEPT if _shown_as(made[n]) in done.stdout]
        assert not kept_named, done.stdout
        named_by_real_run = f"removing container {dead}" in done.stdout and (
            f"removing snapshot image {snapshot}" in done.stdout
        )
        if named_by_real_run:
            break
    assert named_by_real_run, done.stdout


def test_a_snapshot_removed_while_listed_is_skipped_not_an_error() -> None:
    """Another run may remove a listed snapshot before it is looked at (every docker run
    reaps): the listing goes on without it."""
    import docker.errors

    from pytest_agentbench.sandbox.docker import LABEL_OWNER, dead_owner_snapshots, owner_token

    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = owner_token(os.getpid()).replace(f":{os.getpid()}:", f":{dead.pid}:")

    class Images:
        def get(self, image_id: str) -> str:
            if image_id == "reaped":
                raise docker.errors.NotFound("no such image")
            return image_id

    class Api:
        def images(self, filters: dict[str, str]) -> list[dict[str, Any]]:
            labels = {LABEL_OWNER: gone}
            return [{"Id": "reaped", "Labels": labels}, {"Id": "left", "Labels": labels}]

    class Client:
        api, images = Api(), Images()

    assert dead_owner_snapshots(Client()) == ["left"]


def test_docker_engine_missing_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("suite", "t", "workspace").mkdir(parents=True)
    pytester.path.joinpath("suite", "t", "expected").mkdir()
    pytester.path.joinpath("suite", "t", "task.toml").write_text('prompt = "x"\n')
    os.environ["DOCKER_HOST"] = "unix:///nonexistent/docker.sock"
    try:
        result = pytester.runpytest_subprocess(
            "--agent=nop",
            f"--tasks={pytester.path / 'suite'}",
            "--sandbox=docker",
            "--docker-image=any-image:1",
        )
    finally:
        del os.environ["DOCKER_HOST"]
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no Docker engine answers at unix:///nonexistent*start*"])


def test_docker_interrupted_run_leaves_no_container(pytester: pytest.Pytester) -> None:
    skip_unless_sandbox("docker")
    suite = pytester.path / "suite" / "slow-interrupted"
    (suite / "workspace").mkdir(parents=True)
    (suite / "expected").mkdir()
    (suite / "task.toml").write_text('prompt = "wait"\ntimeout = 120\n')
    before = our_containers("slow-interrupted")
    checkout = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [checkout, PYTHONPATH]))}
    log = pytester.path / "interrupted-run.log"
    log_file = log.open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "--agent=command",
            "--agent-cmd=sleep 100",
            f"--tasks={suite.parent}",
            "--sandbox=docker",
            f"--docker-image={TEST_IMAGE}",
        ],
        cwd=pytester.path,
        env=env,
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 90
        while not (our_containers("slow-interrupted") - before) and time.monotonic() < deadline:
            assert process.poll() is None, f"the run ended early: {log.read_text()[-3000:]}"
            time.sleep(0.2)
        assert our_containers("slow-interrupted") - before, "the trial never started a container"
        process.send_signal(2)  # Ctrl-C: no new trial; the one in flight may finish
        time.sleep(1)
        assert process.poll() is None, "the first Ctrl-C stopped the trial in flight"
        process.send_signal(2)  # the second: stop at once
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log_file.close()
    assert our_containers("slow-interrupted") <= before


@pytest.mark.skipif(shutil.which("docker") is None, reason="docker CLI not installed")
def test_docker_test_image_runs_sh_and_python() -> None:
    skip_unless_sandbox("docker")
    out = subprocess.run(
        ["docker", "run", "--rm", TEST_IMAGE, "/bin/sh", "-c", "python3 -c 'print(6*7)'"],
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == b"42"


@pytest.mark.parametrize("bind_mounts", [True, False], ids=["bind", "copy"])
def test_docker_rounds_share_the_container_and_reach_the_host_copy(bind_mounts: bool) -> None:
    skip_unless_sandbox("docker")
    from pytest_agentbench.sandbox.docker import DockerProvider
    from pytest_agentbench.settings import SandboxLimits
    from pytest_agentbench.tasks.model import MemoryTree, Task

    task = Task(id="t", prompt="p", source="s", make_input=lambda: MemoryTree({"a.txt": b"1\n"}))
    provider = DockerProvider(SandboxLimits(), TEST_IMAGE, bind_mounts=bind_mounts)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/home/agent"}
    with provider.create(task, "t-r0") as sandbox:
        (sandbox.home / "prompt.txt").write_text("round one\n")
        first = sandbox.run(
            ["/bin/sh", "-c", "cat $HOME/prompt.txt >> a.txt; echo kept > /tmp/state; id -u"],
            env=env,
            timeout=30,
        )
        assert first.exit_code == 0 and first.stdout.strip() != b"0"  # not root
        assert (sandbox.workspace / "a.txt").read_text() == "1\nround one\n"
        second = sandbox.run(
            ["/bin/sh", "-c", "cat /tmp/state > usage.json; mv usage.json $HOME/"],
            env=env,
            timeout=30,
        )
        assert second.exit_code == 0, second.stderr
        assert (sandbox.home / "usage.json").read_text() == "kept\n"
        container = sandbox.container  # type: ignore[attr-defined]
    listed = provider.client.containers.list(all=True, ignore_removed=True)
    assert container.id not in {c.id for c in listed}


def test_install_root_never_exposes_a_hidden_directory(tmp_path: Path) -> None:
    from pytest_agentbench.sandbox.bwrap import install_root

    package = tmp_path / "opt" / "agents" / "node_modules" / "@x" / "cli" / "bin"
    package.mkdir(parents=True)
    (package / "cli.js").write_text("")
    assert install_root(package / "cli.js", []) == tmp_path / "opt" / "agents"
    home_bin = tmp_path / "home" / "bin"
    home_bin.mkdir(parents=True)
    (home_bin / "agent").write_text("")
    assert install_root(home_bin / "agent", [tmp_path / "home"]) == home_bin
    assert install_root(home_bin / "agent", []) == tmp_path / "home"
    project = tmp_path / "project"  # a script at its top, found on PATH
    project.mkdir()
    (project / "agent.sh").write_text("")
    assert install_root(project / "agent.sh", [project]) == project / "agent.sh"
    assert install_root(home_bin / "agent", [home_bin / "runs"]) == home_bin / "agent"


def test_a_shell_command_string_is_not_a_launched_program(tmp_path: Path) -> None:
    """The command agent's one-word command (`./agent.sh`, made absolute) is the shell's
    command string: command_line.py shows that file alone, never its directory."""
    from pytest_agentbench.sandbox.bwrap import launched_programs

    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert launched_programs(["/bin/sh", "-c", str(script)]) == ["/bin/sh"]
    wrapped = ["/bin/sh", "-c", 'exec "$@"', "agentbench-cli", str(script), "--go"]
    assert launched_programs(wrapped) == ["/bin/sh", str(script)]
