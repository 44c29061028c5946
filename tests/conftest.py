"""Shared helpers for the project's own tests: writing small task directories."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

# docker and numpy are imported here, before pytester's in-process runs snapshot sys.modules:
# a run that imported them first would have them dropped afterwards, and a second import then
# breaks (requests: "You can only merge into CookieJar"; numpy: "cannot load module more than
# once per process").
import docker
import numpy  # noqa: F401
import pytest
from tiny_tasks import make_tasks

from pytest_agentbench.sandbox.bwrap import bwrap_works
from pytest_agentbench.testing.clis import PINS, find_cli, missing_reason

# trio (selenium's) registers a hypothesis plugin whose import warns that hypothesis may lose
# its PRNG; the hypothesis pytest plugin imports hypothesis late, in the terminal summary, so
# every pytest subprocess a test starts would end with a third party's "1 warning".
_THIRD_PARTY_WARNING = "ignore:It looks like `register_random` was passed an object"
os.environ["PYTHONWARNINGS"] = ",".join(
    filter(None, [os.environ.get("PYTHONWARNINGS"), _THIRD_PARTY_WARNING])
)

TEST_IMAGE = os.environ.get("AGENTBENCH_TEST_IMAGE", "agentbench-test:1")
# The same image with the pinned agent CLIs installed in it (built by .ci/install-sandboxes.sh).
AGENT_IMAGE = os.environ.get("AGENTBENCH_TEST_AGENT_IMAGE", "agentbench-test-agents:1")

# Runs a test started in a process group of their own, killed when the test ends.
BACKGROUND_RUNS: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _background_runs_are_killed() -> Iterator[None]:
    """A test that fails while a run it started still goes leaves no process behind, and no
    open pipe whose ResourceWarning would fail a later test."""
    yield
    while BACKGROUND_RUNS:
        process = BACKGROUND_RUNS.pop()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)


def write_task(
    root: Path,
    task_id: str,
    workspace: Mapping[str, str | bytes],
    expected: Mapping[str, str | bytes] | None = None,
    *,
    prompt: str = "Do the edit.",
    toml_extra: str = "",
    verify: str | None = None,
    solution: Mapping[str, str | bytes] | None = None,
    cheats: Mapping[str, Mapping[str, str | bytes]] | None = None,
) -> Path:
    """Write one directory task; returns its directory."""
    task_dir = root / task_id
    task_dir.mkdir(parents=True)
    (task_dir / "task.toml").write_text(f"prompt = {json.dumps(prompt)}\n{toml_extra}")
    write_tree(task_dir / "workspace", workspace)
    if expected is not None:
        write_tree(task_dir / "expected", expected)
    if verify is not None:
        script = task_dir / "verify"
        script.write_text(verify)
        os.chmod(script, 0o755)
    if solution is not None:
        write_tree(task_dir / "solution", solution)
    for name, tree in (cheats or {}).items():
        write_tree(task_dir / "cheats" / name, tree)
    return task_dir


@pytest.fixture
def task_factory(tmp_path: Path) -> Callable[..., Path]:
    """Write tasks under tmp_path/tasks."""
    root = tmp_path / "tasks"
    root.mkdir(exist_ok=True)

    def make(task_id: str, workspace: Mapping[str, Any], expected: Any = None, **kw: Any) -> Path:
        return write_task(root, task_id, workspace, expected, **kw)

    return make


def simple_tasks(root: Path, count: int) -> Path:
    """`count` one-line replacement tasks under root; returns root."""
    for i in range(count):
        write_task(
            root,
            f"t{i:02d}",
            {"a.txt": f"value {i}\n", "keep.txt": "keep\n"},
            {"a.txt": f"value {i + 1}\n", "keep.txt": "keep\n"},
            prompt=f"In a.txt replace {i} with {i + 1}.",
        )
    return root


def without_measured_times(report: dict[str, Any]) -> dict[str, Any]:
    """A JSON report less the harness's own time, which the machine measures (the mock's
    other figures are drawn): what two runs of the same trials share."""
    for observation in report.get("observations") or []:
        (observation.get("trajectory") or {}).pop("harness_s", None)
        for attempt in observation.get("attempt_log") or []:
            attempt.pop("wall_s", None)
    if report.get("trajectories"):
        report["trajectories"].pop("time")
    return report


def one_error_line(result: pytest.RunResult, pattern: str) -> None:
    """Exit code 4, no test ran, and the whole of stderr is one line matching pattern."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.lines if line.strip()]
    assert len(lines) == 1, lines
    result.stderr.fnmatch_lines([pattern])
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()


def _docker_reason(image: str = TEST_IMAGE) -> str | None:
    try:
        with contextlib.closing(docker.from_env()) as client:
            client.ping()
            labels = client.images.get(image).labels or {}
    except Exception as exc:
        return f"no Docker engine or no image {image} ({exc}); run .ci/install-sandboxes.sh"
    if image == AGENT_IMAGE and labels.get("io.agentbench.pins") != _pins():
        return f"image {image} holds other CLI versions than the pins; run .ci/install-sandboxes.sh"
    return None


def _pins() -> str:
    return " ".join(f"{p.name} {p.package} {p.version} {p.binary}" for p in PINS.values())


def skip_unless_sandbox(kind: str) -> None:
    """Skip (in CI: fail) a test of sandbox `kind` where it cannot run, saying why.
    `docker-image` is docker with the pinned agent CLIs installed in the image."""
    checks: dict[str, Callable[[], str | None]] = {
        "tmp": lambda: None,
        "bwrap": bwrap_works,
        "docker": _docker_reason,
        "docker-image": lambda: _docker_reason(AGENT_IMAGE),
    }
    why = checks[kind]()
    if why:
        pytest.skip(why)


def cli_under_bwrap(name: str) -> str:
    """The agent CLI name, once it and bubblewrap are found; else skip (in CI: fail) saying
    which is missing."""
    if find_cli(name) is None:
        pytest.skip(missing_reason(name))
    skip_unless_sandbox("bwrap")
    return name


def our_containers(trial_prefix: str = "") -> set[str]:
    """Containers this project created (optionally only those of trials named trial_prefix*).

    Engine errors propagate: a listing that failed must never read as "no container left".
    """
    with contextlib.closing(docker.from_env()) as client:
        listed = client.containers.list(
            all=True, filters={"label": "io.agentbench.owner"}, ignore_removed=True
        )
    return {
        container.id
        for container in listed
        if container.labels.get("io.agentbench.trial", "").startswith(trial_prefix)
    }


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """In CI (AGENTBENCH_REQUIRE_REAL=1) a skipped `real` test is a failure, never a pass."""
    report = yield
    if (
        report.skipped
        and item.get_closest_marker("real")
        and os.environ.get("AGENTBENCH_REQUIRE_REAL")
    ):
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.longrepr = f"a real component is missing where it is required: {reason}"
    return report


# The judges' mock run with two arms ---------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"


@pytest.fixture
def arm_run(pytester: pytest.Pytester) -> Path:
    """A finished mock run for the judges (tests/test_judges.py, tests/test_judge_agent.py):
    two tiny tasks run under vanilla (always the reference change) and core (always the
    reference plus a stray file: a longer diff), each task with a cheat tree for gold."""
    tasks = make_tasks(pytester.path, 2)
    for task in ("t00", "t01"):
        cheat = tasks / task / "cheats" / "padded" / "notes.txt"
        cheat.parent.mkdir(parents=True)
        cheat.write_text(f"task {task[-1]}\nstatus: final\nchecked: yes\nsigned: yes\n")
    shutil.copytree(EXAMPLES, pytester.path / "examples")
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "--agent=mock", "--sandbox=tmp",
        f"--tasks={tasks.name}", "--arms=examples/arms.toml", "--agentbench-dir=run",
        "--agent-opt=pass_prob=1", "--agent-opt=pass_prob.arm.core=0",
        "--agent-opt=wrong=extra", "-k", "vanilla or core",
    )  # fmt: skip
    assert (pytester.path / "run" / "observations.jsonl").is_file(), result.outlines[-20:]
    return pytester.path / "run"
