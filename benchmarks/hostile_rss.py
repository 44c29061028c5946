"""Peak memory of the harness's own processes while hostile agents run.

The corpus of pytest_agentbench.testing.hostile (a 1.5 GB file, a 20 GB sparse file, a
512 MB stdout flood, 100,000 small files, nesting deeper than PATH_MAX, ...) runs with `-n 2`
under each sandbox, and every harness process, the controller and each xdist worker, reports
its own peak resident set (VmHWM) when pytest unconfigures it, through a conftest.py in the run
directory. Agents, the file helper and the Docker engine are not counted. The harness must stay
flat whatever the agents write: every process under 300 MB. A sandbox this machine cannot run
is a failed check saying why.

    python -m benchmarks --only hostile_rss          # tmp, bwrap, docker; --quick: tmp only
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.core import Benchmark, Context, Target, check
from benchmarks.procs import child_env, pytest_dir, run_process
from pytest_agentbench.sandbox.bwrap import BwrapProvider, bwrap_works
from pytest_agentbench.settings import SandboxLimits
from pytest_agentbench.testing.hostile import AGENT_CMD, PIDS_LIMIT, cases, write_suite

IMAGE = "agentbench-test:1"
TARGET_MB = 300
REPORT_RSS = """
import json, os


def pytest_unconfigure(config):
    role = "worker" if hasattr(config, "workerinput") else "controller"
    with open("/proc/self/status") as status:
        peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    path = os.path.join(os.environ["HOSTILE_RSS_DIR"], f"{role}-{os.getpid()}.json")
    with open(path, "w") as out:
        json.dump({"role": role, "pid": os.getpid(), "peak_rss_mb": peak_kb / 1024}, out)
"""


def _unavailable(kind: str) -> str | None:
    if kind == "bwrap":
        return bwrap_works()
    if kind == "docker":
        try:
            import docker

            client = docker.from_env()
            client.images.get(IMAGE)
            client.close()
        except Exception as exc:
            return f"no Docker engine or no image {IMAGE} ({exc})"
    return None


def _limits_hold(kind: str) -> bool:
    return kind == "docker" or (
        kind == "bwrap" and BwrapProvider(SandboxLimits(), None).use_cgroups
    )


def _measure(scratch: Path, kind: str) -> tuple[list[dict[str, Any]], str]:
    """One corpus run: every harness process's peak RSS, and pytest's summary line."""
    root = scratch / kind
    cwd = pytest_dir(root / "run")
    (cwd / "conftest.py").write_text(REPORT_RSS)
    suite = write_suite(root / "suite", cases(process_limits=_limits_hold(kind)))
    reports = root / "rss"
    tmpdir = root / "tmp"
    reports.mkdir()
    tmpdir.mkdir()
    env = {**child_env(), "HOSTILE_RSS_DIR": str(reports), "TMPDIR": str(tmpdir)}
    done = run_process(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "--agent=command",
            f"--agent-cmd={AGENT_CMD}",
            f"--tasks={suite}",
            f"--sandbox={kind}",
            f"--docker-image={IMAGE}",
            f"--sandbox-pids={PIDS_LIMIT}",
            "-n",
            "2",
        ],
        cwd=cwd,
        env=env,
    )
    if done.returncode not in (0, 1):
        tail = "\n".join(done.output.splitlines()[-30:])
        raise RuntimeError(f"the {kind} corpus run exited {done.returncode}:\n{tail}")
    processes = [json.loads(path.read_text()) for path in sorted(reports.glob("*.json"))]
    outcomes = [line for line in done.output.splitlines() if " in " in line and "passed" in line]
    summary = outcomes[-1].strip("= ") if outcomes else "no summary line"
    return processes, summary


def run(ctx: Context) -> list[dict]:
    results = []
    for kind in ("tmp",) if ctx.quick else ("tmp", "bwrap", "docker"):
        name = f"peak RSS of the largest harness process, hostile corpus, {kind}, -n 2"
        why = _unavailable(kind)
        if why is not None:
            results.append(
                check(
                    name,
                    unit="MB",
                    value=[float("inf")],
                    target=Target("value", "<", TARGET_MB),
                    note=why,
                )
            )
            continue
        processes, summary = _measure(ctx.scratch, kind)
        roles = {p["role"] for p in processes}
        note = f"controller and {len(processes) - 1} workers; pytest: {summary}"
        if roles != {"controller", "worker"}:
            note = f"missing reports (got {sorted(roles)}); pytest: {summary}"
        results.append(
            check(
                name,
                unit="MB",
                value=[max(p["peak_rss_mb"] for p in processes)] if processes else [float("inf")],
                target=Target("value", "<", TARGET_MB),
                note=note,
                processes=[
                    {"role": p["role"], "peak_rss_mb": round(p["peak_rss_mb"], 1)}
                    for p in processes
                ],
            )
        )
    return results


BENCHMARK = Benchmark("hostile_rss", "harness memory while hostile agents run", run)
