"""Per-trial cost of each sandbox against the same isolation done by hand, no-op agent command.

A trial here is what a sandbox does per task and repeat: lay out the input tree, run the
agent's command (``/bin/sh -c :``) inside, tear everything down. Each floor does that work
bare, output captured as any harness must:

- tmp: copy the tree into a temp dir, spawn the command, remove the dir;
- bwrap: the same copy, the command under a bare ``bwrap --unshare-all --ro-bind / / ...``;
- docker: the same copy, one container of the command on the host network (the sandbox's
  default too) through the SDK: create, start, wait, remove.

Background removals (tmp) are waited for inside each timed batch, so they count. A sandbox
this machine cannot run is a failed check saying why, never a missing line.

    python -m benchmarks.sandbox_overhead      # this benchmark alone, through the runner
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.core import Benchmark, Context, Target, check
from pytest_agentbench.fs.filework import wait_for_file_work
from pytest_agentbench.sandbox import home_parent
from pytest_agentbench.sandbox.base import SandboxProvider
from pytest_agentbench.settings import SandboxLimits
from pytest_agentbench.tasks.model import MemoryTree, Task, materialize

NOOP = ["/bin/sh", "-c", ":"]
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/home/agent"}
IMAGE = "agentbench-test:1"
FILES = 20
BATCH = {"tmp": 20, "bwrap": 20, "docker": 4}  # trials per timed sample
TARGET = Target("ratio", "<=", 1.3)


def _task() -> Task:
    tree = {f"src/file{i}.txt": f"line {i}\n".encode() * 20 for i in range(FILES)}
    return Task(
        id="noop", prompt="nothing", source="benchmark", make_input=lambda: MemoryTree(tree)
    )


def _sandbox_trial(provider: SandboxProvider, task: Task) -> Callable[[], None]:
    def trial() -> None:
        with provider.create(task, "bench-r0") as sandbox:
            result = sandbox.run(NOOP, env=ENV, timeout=60)
            if result.exit_code != 0:
                raise RuntimeError(f"{provider.kind}: no-op exited {result.exit_code}")

    return trial


def _bare_copy(task: Task, spawn: Callable[[Path], None]) -> Callable[[], None]:
    def floor() -> None:
        root = Path(tempfile.mkdtemp(prefix="agentbench-floor-"))
        materialize(task.input_tree, root)
        spawn(root)
        shutil.rmtree(root)

    return floor


def _spawn_plain(root: Path) -> None:
    subprocess.run(
        NOOP, cwd=root, env=ENV, stdin=subprocess.DEVNULL, capture_output=True, check=True
    )


def _spawn_bwrap(root: Path) -> None:
    bare = ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--bind", str(root), "/tmp"]
    subprocess.run(
        [*bare, "--chdir", "/tmp", *NOOP],
        env=ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
    )


def _spawn_docker(image: str) -> Callable[[Path], None]:
    import docker

    client = docker.from_env()

    def spawn(root: Path) -> None:
        container = client.containers.create(image, NOOP, network_mode="host")
        container.start()
        container.wait()
        container.logs()  # the output, as any harness collects it
        container.remove(force=True)

    return spawn


def _per_trial_ms(action: Callable[[], None], trials: int) -> float:
    start = time.perf_counter()
    for _ in range(trials):
        action()
    wait_for_file_work()  # a sandbox that removes in the background pays for it here
    return (time.perf_counter() - start) / trials * 1000


def _cases(task: Task) -> tuple[dict[str, tuple[SandboxProvider, Callable[[], None]]], dict]:
    """kind -> (provider, floor) for every sandbox usable here; kind -> why not for the rest."""
    from pytest_agentbench.sandbox.bwrap import BwrapProvider, bwrap_works
    from pytest_agentbench.sandbox.tmp import TmpProvider

    limits = SandboxLimits()
    cases: dict[str, tuple[SandboxProvider, Callable[[], None]]] = {
        "tmp": (TmpProvider(home_parent("auto")), _bare_copy(task, _spawn_plain))
    }
    missing: dict[str, str] = {}
    reason = bwrap_works()
    if reason is None:
        cases["bwrap"] = (
            BwrapProvider(limits, home_parent("auto")),
            _bare_copy(task, _spawn_bwrap),
        )
    else:
        missing["bwrap"] = reason
    try:
        from pytest_agentbench.sandbox.docker import DockerProvider

        provider = DockerProvider(limits, IMAGE)
        cases["docker"] = (provider, _bare_copy(task, _spawn_docker(IMAGE)))
    except Exception as exc:  # no engine or no image: say so instead of a number
        missing["docker"] = f"{type(exc).__name__}: {exc}"
    return cases, missing


FLOORS = {
    "tmp": "copy the tree to a temp dir, spawn /bin/sh -c : (output captured), rmtree",
    "bwrap": "the same copy, /bin/sh -c : under bare bwrap --unshare-all --ro-bind / /",
    "docker": f"the same copy, SDK create/start/wait/logs/remove of /bin/sh -c : ({IMAGE})",
}


def run(ctx: Context) -> list[dict[str, Any]]:
    task = _task()
    cases, missing = _cases(task)
    checks = []
    for kind, (provider, floor) in cases.items():
        trial = _sandbox_trial(provider, task)
        trial(), floor()  # warm caches (page cache, image layers, SDK connection)
        batch = BATCH[kind] if not ctx.quick else max(2, BATCH[kind] // 4)
        subject, bare = [], []
        for _ in range(ctx.runs(5, 2)):
            subject.append(_per_trial_ms(trial, batch))
            bare.append(_per_trial_ms(floor, batch))
        checks.append(
            check(
                f"{kind} sandbox, no-op trial",
                unit="ms/trial",
                value=subject,
                floor=bare,
                paired=True,
                floor_is=FLOORS[kind],
                target=TARGET,
                note=f"{FILES} files in the input tree; each sample is the mean of {batch} trials",
            )
        )
    for kind, reason in missing.items():
        checks.append(
            check(
                f"{kind} sandbox available",
                unit="available (1 = yes)",
                value=[0.0],
                target=Target("value", ">=", 1),
                note=reason,
            )
        )
    return checks


BENCHMARK = Benchmark("sandbox_overhead", "each sandbox's no-op trial vs bare isolation", run)

if __name__ == "__main__":
    from benchmarks.__main__ import main

    sys.exit(main(["--only", BENCHMARK.name, *sys.argv[1:]]))
