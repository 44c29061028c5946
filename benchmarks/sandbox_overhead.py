"""Per-trial overhead of each sandbox against its floor, with a no-op agent command.

A trial here is what the harness does per task and repeat: lay out the input tree, run the
agent's command (`/bin/sh -c :`) inside the sandbox, tear everything down. Each floor is the
least that kind of isolation costs done by hand, output captured as any harness must: a bare
copy + spawn for tmp, a bare copy + `bwrap ... true` for bwrap, a bare SDK
create/start/wait/remove for docker (on the host network, the sandbox's default too).

    python -m benchmarks.sandbox_overhead [--trials N] [--image IMAGE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_agentbench.sandbox.limits import SandboxLimits
from pytest_agentbench.tasks.model import MemoryTree, Task, materialize

NOOP = ["/bin/sh", "-c", ":"]
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/home/agent"}
TARGET_RATIO = 1.3


def _task(files: int) -> Task:
    tree = {f"src/file{i}.txt": f"line {i}\n".encode() * 20 for i in range(files)}
    return Task(
        id="noop", prompt="nothing", source="benchmark", make_input=lambda: MemoryTree(tree)
    )


def _median_s(action: Callable[[], None], trials: int) -> float:
    action()  # warm caches (page cache, image layers) before timing
    times = []
    for _ in range(trials):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _sandbox_trial(provider: Any, task: Task) -> Callable[[], None]:
    def trial() -> None:
        with provider.create(task, "bench-r0") as sandbox:
            result = sandbox.run(NOOP, env=ENV, timeout=60)
            assert result.exit_code == 0, result.stderr

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
    subprocess.run(
        ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--bind", str(root), "/tmp", "true"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
    )


def _docker_floor(image: str) -> Callable[[], None]:
    import docker

    client = docker.from_env()

    def floor() -> None:
        container = client.containers.create(image, NOOP, network_mode="host")
        container.start()
        container.wait()
        container.remove(force=True)

    return floor


def measure(trials: int = 10, image: str = "agentbench-test:1", files: int = 20) -> dict[str, Any]:
    """Median seconds per trial for each available sandbox and its floor, and their ratio."""
    from pytest_agentbench.sandbox.bwrap import BwrapProvider, bwrap_works
    from pytest_agentbench.sandbox.tmp import TmpProvider

    task = _task(files)
    limits = SandboxLimits()
    cases: dict[str, tuple[Callable[[], Any], Callable[[], None]]] = {
        "tmp": (TmpProvider, _bare_copy(task, _spawn_plain)),
    }
    skipped: dict[str, str] = {}
    reason = bwrap_works()
    if reason is None:
        cases["bwrap"] = (lambda: BwrapProvider(limits), _bare_copy(task, _spawn_bwrap))
    else:
        skipped["bwrap"] = reason
    try:
        from pytest_agentbench.sandbox.docker import DockerProvider

        docker_provider = DockerProvider(limits, image)
        cases["docker"] = (lambda: docker_provider, _docker_floor(image))
    except Exception as exc:  # no engine or no image: say so instead of a number
        skipped["docker"] = str(exc)
    figures: dict[str, Any] = {}
    for kind, (make, floor) in cases.items():
        sandbox_s = _median_s(_sandbox_trial(make(), task), trials)
        floor_s = _median_s(floor, trials)
        figures[kind] = {
            "sandbox_ms": round(sandbox_s * 1000, 1),
            "floor_ms": round(floor_s * 1000, 1),
            "ratio": round(sandbox_s / floor_s, 2),
            "within_target": sandbox_s / floor_s <= TARGET_RATIO,
        }
    return {
        "trials": trials,
        "files": files,
        "target_ratio": TARGET_RATIO,
        "sandboxes": figures,
        "skipped": skipped,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--image", default="agentbench-test:1")
    parser.add_argument("--files", type=int, default=20, help="files in the input tree")
    args = parser.parse_args()
    print(json.dumps(measure(args.trials, args.image, args.files), indent=2))


if __name__ == "__main__":
    main()
