"""Per-trial overhead of the command agent against trivial pytest items doing the same work.

Subject: ``pytest --agent=command --agent-cmd=true`` over N tiny generated tasks (input equals
expected, so every trial passes). Floor: N parametrized items that each copy the same input
tree to a temp dir, spawn /bin/true and read the tree back. Both are whole-process wall times
with the same pytest start-up, measured alternately in one run. The plugin runs with
--sandbox=tmp, like the floor without isolation; what isolation costs is a sandbox figure.
"""

from __future__ import annotations

from benchmarks.core import Benchmark, Context, Target, check
from benchmarks.procs import pytest_dir, run_pytest
from benchmarks.taskgen import make_tasks

FLOOR_TEST = """
import os, shutil, subprocess, tempfile
import pytest

TASKS = {tasks!r}


@pytest.mark.parametrize("index", range({count}))
def test_trial(index):
    root = tempfile.mkdtemp()
    workspace = os.path.join(root, "workspace")
    shutil.copytree(os.path.join(TASKS, f"t{{index:04d}}", "workspace"), workspace)
    subprocess.run(["/bin/true"], check=True)
    for dirpath, _dirs, files in os.walk(workspace):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as handle:
                handle.read()
    shutil.rmtree(root)
"""


def run(ctx: Context) -> list[dict]:
    count = 300
    tasks = make_tasks(ctx.scratch / "tasks", count, change=False)
    subject_dir = pytest_dir(ctx.scratch / "subject")
    floor_dir = pytest_dir(ctx.scratch / "floor")
    (floor_dir / "test_floor.py").write_text(FLOOR_TEST.format(tasks=str(tasks), count=count))
    subject_args = ("--agent=command", "--agent-cmd=true", "--sandbox=tmp", f"--tasks={tasks}")
    subject, floor = [], []
    for _ in range(ctx.runs(7, 2)):
        subject.append(run_pytest(subject_dir, *subject_args, ok=(0,)).wall_s / count * 1000)
        floor.append(run_pytest(floor_dir, "test_floor.py", ok=(0,)).wall_s / count * 1000)
    return [
        check(
            f"command agent, {count} trials",
            unit="ms/trial",
            value=subject,
            floor=floor,
            paired=True,
            floor_is=f"{count} pytest items: copytree the input, spawn /bin/true, read back",
            target=Target("ratio", "<=", 1.5),
            note="whole-process wall divided by trials; pytest start-up is in both",
        )
    ]


BENCHMARK = Benchmark(
    "trial_overhead", "per-trial overhead of --agent=command vs plain pytest", run
)
