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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from pytest_agentbench.fs import names
from pytest_agentbench.fs.filework import remove_later
from pytest_agentbench.grading.measures import FIGURES, FileChange, FileSides, is_test_path
from pytest_agentbench.sandbox.base import kill_group
from pytest_agentbench.sandbox.ownership import owned_dir
from pytest_agentbench.tasks.model import Tree, materialize

COVERAGE_FIGURES = FIGURES["coverage"]
"""coverage_lines: added Python source lines that are statements; coverage_lines_run: those the
tests executed; changed_line_coverage: the share, run / lines."""

STARTUP = """\
try:
    import coverage
except ImportError:  # this interpreter has no coverage.py: it goes unmeasured
    pass
else:
    coverage.process_startup()
"""
_CREDENTIALS = ("_API_KEY", "_AUTH_TOKEN", "_ACCESS_TOKEN")
"""Environment variables ending so are left out of the tests' environment."""
DATA_FILE = ".coverage"


@dataclass(frozen=True)
class TaskTests:
    """How a task's own tests run: its test_command, with the verifier's timeout and env."""

    command: str
    timeout: float
    env: Mapping[str, str]


Figures = dict[str, int | float | None]


@dataclass(frozen=True)
class Measured:
    """What a run of the tests under coverage left: the directory of its data files, and the
    directory the workspace was at where the tests ran (a host path, or one in a container)."""

    data: Path
    root: PurePath


TestRunner = Callable[[TaskTests, Path, Path, Sequence[str]], "Measured | str"]
"""Runs the tests on the rebuilt workspace, given its host path, a scratch directory and the
paths the change deleted (a copy laid over the input must remove them); what the tests left, or
why nothing can be counted."""


def coverage_figures(
    input_tree: Tree,
    changes: Sequence[FileChange],
    sides: Sequence[FileSides],
    tests: TaskTests,
    test_paths: Sequence[str] | None,
    run_tests: TestRunner | None = None,
) -> tuple[Figures, str | None]:
    """COVERAGE_FIGURES of a change and, when they are None, why; the tests run on the host
    unless run_tests runs them elsewhere (in the task's image: grading/image_coverage.py)."""
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
        deleted = [side.change.path for side in sides if side.after is None]
        measured = (run_tests or run_on_host)(tests, workspace, scratch, deleted)
        if isinstance(measured, str):
            return unknown, measured
        return count(measured, workspace, added)
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


def write_hook(directory: Path) -> None:
    """The sitecustomize.py that starts coverage.py in every Python process whose path has
    directory first."""
    directory.mkdir()
    (directory / "sitecustomize.py").write_text(STARTUP)


def coveragerc(data_file: str, source: str) -> str:
    """The configuration every measured process reads: parallel data files, the workspace's
    files only."""
    return f"[run]\ndata_file = {data_file}\nparallel = true\nsource = {source}\n"


def without_credentials(env: Mapping[str, str]) -> dict[str, str]:
    """The environment less the variables that look like model credentials."""
    return {k: v for k, v in env.items() if not k.endswith(_CREDENTIALS)}


def run_on_host(
    tests: TaskTests, workspace: Path, scratch: Path, deleted: Sequence[str]
) -> Measured | str:
    """Run the test command under coverage in the workspace on this machine, as a directory
    task's verifier runs (the rebuilt workspace has no deleted file left)."""
    hook = scratch / "hook"
    write_hook(hook)
    data = scratch / "data"
    data.mkdir()
    rc = scratch / "coveragerc"
    rc.write_text(coveragerc(str(data / DATA_FILE), str(workspace)))
    env = without_credentials(os.environ)
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
        return timed_out(tests)
    finally:
        kill_group(process.pid)
        process.wait()
    return Measured(data, workspace)


def timed_out(tests: TaskTests) -> str:
    """Why nothing is counted when the tests ran past their time."""
    return f"the test command timed out after {tests.timeout:g} s"


def count(
    measured: Measured, workspace: Path, added: Mapping[str, set[int]]
) -> tuple[Figures, str | None]:
    """The figures from the data a run left: each added line's file is parsed from the host's
    rebuilt workspace and looked up in the data by the name it had where the tests ran."""
    import coverage
    from coverage.exceptions import CoverageException, NoDataError, NotPython

    unknown: Figures = dict.fromkeys(COVERAGE_FIGURES)
    data_file = measured.data / DATA_FILE
    reader = coverage.Coverage(data_file=str(data_file), config_file=False)
    try:
        reader.combine([str(measured.data)], strict=True)
    except NoDataError:
        return unknown, "the test command ran no Python that has coverage.py"
    data = reader.get_data()
    statements = run = 0
    for path, lines in sorted(added.items()):
        name = names.to_os(path)
        try:
            executable = set(reader.analysis2(str(workspace / name))[1])
        except NotPython:
            return unknown, f"{path} does not parse as Python"
        except CoverageException as error:
            return unknown, f"{path}: {error}"
        executed = set(data.lines(str(measured.root / name)) or ())
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
