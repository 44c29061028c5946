"""Changed-line coverage (docs/measures.md): the share of a change's added Python source lines
that the workspace's own tests execute, measured by coverage.py.

The task's `test_command` runs on a workspace rebuilt from the input tree and the change (so a
trial measured on its host and a finished run measured again take one path), on the host where
a directory task's verifier runs, after the agent is done and without model credentials.
Every Python process it starts is measured: a `sitecustomize` put first on PYTHONPATH starts
coverage.py in each (coverage's documented way to measure subprocesses), so the command may be
`pytest`, `python -m unittest`, `make test` or a script. A figure that cannot be known is None,
with the reason.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.fs import names
from pytest_agentbench.fs.filework import remove_later
from pytest_agentbench.grading.measures import FIGURES, FileChange, FileSides, is_test_path
from pytest_agentbench.sandbox.base import kill_group
from pytest_agentbench.sandbox.ownership import owned_dir
from pytest_agentbench.tasks.model import Tree, materialize

COVERAGE_FIGURES = FIGURES["coverage"]
"""coverage_lines: added Python source lines that are statements; coverage_lines_run: those the
tests executed; changed_line_coverage: the share, run / lines."""

_STARTUP = """\
try:
    import coverage
except ImportError:  # this interpreter has no coverage.py: it goes unmeasured
    pass
else:
    coverage.process_startup()
"""
_CREDENTIALS = ("_API_KEY", "_AUTH_TOKEN", "_ACCESS_TOKEN")
"""Environment variables ending so are left out of the tests' environment."""


@dataclass(frozen=True)
class TaskTests:
    """How a task's own tests run: its test_command, with the verifier's timeout and env."""

    command: str
    timeout: float
    env: Mapping[str, str]


Figures = dict[str, int | float | None]


def coverage_figures(
    input_tree: Tree,
    changes: Sequence[FileChange],
    sides: Sequence[FileSides],
    tests: TaskTests,
    test_paths: Sequence[str] | None,
) -> tuple[Figures, str | None]:
    """COVERAGE_FIGURES of a change and, when they are None, why."""
    unknown: Figures = dict.fromkeys(COVERAGE_FIGURES)
    added = _added_source_lines(changes, test_paths)
    if not added:
        return unknown, "the change adds no line to a Python source file"
    rebuilt = {side.change.path for side in sides}
    if missing := [c.path for c in changes if c.path not in rebuilt]:
        return unknown, f"the workspace cannot be rebuilt from the change ({missing[0]})"
    scratch = Path(tempfile.mkdtemp(prefix="agentbench-coverage-", dir=owned_dir()))
    try:
        workspace = Path(os.path.realpath(scratch / "workspace"))
        workspace.mkdir()
        _rebuild(input_tree, sides, workspace)
        data_file = _run_tests(tests, workspace, scratch)
        if data_file is None:
            return unknown, f"the test command timed out after {tests.timeout:g} s"
        return _count(data_file, workspace, added)
    finally:
        remove_later(scratch)


def _added_source_lines(
    changes: Sequence[FileChange], test_paths: Sequence[str] | None
) -> dict[str, set[int]]:
    """Per Python source file (not a test's) left after the change, its added line numbers."""
    added = {}
    for change in changes:
        if change.deleted or not change.path.endswith(".py"):
            continue
        if is_test_path(change.path, test_paths) or not change.added:
            continue
        added[change.path] = {line for line, _ in change.added}
    return added


def _rebuild(input_tree: Tree, sides: Sequence[FileSides], workspace: Path) -> None:
    """The final workspace: the input tree with every changed file's after-text in place."""
    materialize(input_tree, workspace)
    for side in sides:
        path = workspace / names.to_os(side.change.path)
        if side.after is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(side.after, encoding="utf-8")


def _run_tests(tests: TaskTests, workspace: Path, scratch: Path) -> Path | None:
    """Run the test command under coverage; the data file's path, or None at the timeout."""
    hook = scratch / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_STARTUP)
    data = scratch / "data"
    data.mkdir()
    rc = scratch / "coveragerc"
    rc.write_text(
        f"[run]\ndata_file = {data / '.coverage'}\nparallel = true\nsource = {workspace}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith(_CREDENTIALS)}
    env.update(tests.env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hook), env.get("PYTHONPATH")]))
    env["COVERAGE_PROCESS_START"] = str(rc)
    process = subprocess.Popen(
        ["sh", "-c", tests.command],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # the timeout stops everything the command started
    )
    try:
        process.wait(timeout=tests.timeout)
    except subprocess.TimeoutExpired:
        return None
    finally:
        kill_group(process.pid)
        process.wait()
    return data / ".coverage"


def _count(
    data_file: Path, workspace: Path, added: Mapping[str, set[int]]
) -> tuple[Figures, str | None]:
    import coverage
    from coverage.exceptions import CoverageException, NoDataError, NotPython

    unknown: Figures = dict.fromkeys(COVERAGE_FIGURES)
    measured = coverage.Coverage(data_file=str(data_file), config_file=False)
    try:
        measured.combine([str(data_file.parent)], strict=True)
    except NoDataError:
        return unknown, "the test command ran no Python that has coverage.py"
    data = measured.get_data()
    statements = run = 0
    for path, lines in sorted(added.items()):
        filename = str(workspace / names.to_os(path))
        try:
            executable = set(measured.analysis2(filename)[1])
        except NotPython:
            return unknown, f"{path} does not parse as Python"
        except CoverageException as error:
            return unknown, f"{path}: {error}"
        executed = set(data.lines(filename) or ())
        statements += len(lines & executable)
        run += len(lines & executable & executed)
    if not statements:
        return {**unknown, "coverage_lines": 0}, "no added source line is a statement"
    share = round(run / statements, 6)
    return {
        "coverage_lines": statements,
        "coverage_lines_run": run,
        "changed_line_coverage": share,
    }, None
