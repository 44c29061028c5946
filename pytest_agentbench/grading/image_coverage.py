"""Changed-line coverage where a task's verifier runs in its own image (Harbor).

The task's test_command runs once the agent's rounds are over, in a fresh container of the
task's image, as the verifier's tests run there (sandbox/task_image.py): as the verifier's user,
from the working directory, with tests/ at /tests and an empty /logs/verifier. The workspace
rebuilt from the input and the change (grading/coverage.py) is laid over the image's working
directory, the files the change deleted are removed, and the same sitecustomize hook and
configuration the host uses start coverage.py in every Python process, here the image's. The
container has no network and no model credentials and is bounded by the verifier's timeout;
its coverage data are copied out and counted as the host's are, under the names the files had
in the container. An image whose python3 cannot import coverage.py measures nothing, and the
reason says how to give it one.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from pytest_agentbench.fs import names
from pytest_agentbench.grading.coverage import (
    DATA_FILE,
    Measured,
    TaskTests,
    TestRunner,
    coveragerc,
    timed_out,
    without_credentials,
    write_hook,
)
from pytest_agentbench.grading.reward import REWARD_DIR, TESTS_DIR
from pytest_agentbench.tasks.model import ContainerSpec, TaskError

if TYPE_CHECKING:  # loaded where a container runs the tests: a run without Docker never does
    from pytest_agentbench.sandbox.docker import DockerProvider

COVERAGE_DIR = "/opt/agentbench/coverage"  # in the container: the hook, configuration and data
MISSING = "no-coverage"  # left in COVERAGE_DIR when the image's python3 has no coverage.py
ROOT = "root"  # the working directory's real path there: the name the measured files carry


def image_runner(provider: DockerProvider, spec: ContainerSpec) -> TestRunner:
    """A TestRunner that runs the tests in a fresh container of the task's image."""
    return functools.partial(_run_in_image, provider, spec)


def _run_in_image(
    provider: DockerProvider,
    spec: ContainerSpec,
    tests: TaskTests,
    workspace: Path,
    scratch: Path,
    deleted: Sequence[str],
) -> Measured | str:
    import docker.errors
    import requests

    from pytest_agentbench.sandbox.task_image import (
        built_image,
        host_values,
        run_as_verifier,
        task_limits,
    )

    try:
        built = built_image(spec, provider.engines[0])
        env = without_credentials({**host_values(spec, spec.verifier_env, "verifier"), **tests.env})
    except TaskError as error:
        return f"the task's image cannot run its tests: {error}"
    inner = scratch / "inner"  # the host side of COVERAGE_DIR: copied in, then out
    inner.mkdir()
    write_hook(inner / "hook")
    (inner / "data").mkdir()
    script = run_script(tests.command, built.workdir, deleted)
    (inner / "run.sh").write_text(script, encoding="utf-8", errors="surrogateescape")
    verifier = scratch / "verifier"
    verifier.mkdir(mode=0o777)
    verifier.chmod(0o777)  # as the verifier gets it: writable by any verifier user
    try:
        exit_code, _ = run_as_verifier(
            provider,
            provider.engines[0],
            built.tag,
            spec,
            ["sh", f"{COVERAGE_DIR}/run.sh"],
            env=env,
            limits=replace(task_limits(provider, spec), network="none"),
            timeout=tests.timeout,
            put={
                built.workdir: workspace,
                COVERAGE_DIR: inner,
                TESTS_DIR: spec.tests,
                REWARD_DIR: verifier,
            },
            take={COVERAGE_DIR: inner},
        )
    except (docker.errors.APIError, requests.exceptions.ConnectionError) as error:
        return f"the Docker engine failed to run the tests in the task's image: {error}"
    if exit_code is None:
        return timed_out(tests)
    if (inner / MISSING).exists():
        return missing_coverage(spec)
    try:
        root = (inner / ROOT).read_text(encoding="utf-8")
    except FileNotFoundError:
        return (
            f"the tests did not start: the image's working directory {built.workdir} is not there"
        )
    return Measured(inner / "data", PurePosixPath(root))


def missing_coverage(spec: ContainerSpec) -> str:
    """Why nothing was measured in an image without coverage.py, and the fix."""
    if spec.image is None:
        where = f"add `RUN pip install coverage` to {spec.context / 'Dockerfile'}"
    else:
        where = f"use a docker_image that has it (task.toml names {spec.image})"
    return f"the task's image has no coverage.py for python3; install it in the image ({where})"


def run_script(command: str, workdir: str, deleted: Sequence[str]) -> str:
    """The container's command: check coverage.py, note the working directory's real path,
    write the configuration for it, remove the deleted files, then run the test command with
    the hook first on PYTHONPATH (the image's own PYTHONPATH kept after it)."""
    here = shlex.quote
    rc = f"{COVERAGE_DIR}/coveragerc"
    removed = "".join(f"rm -f -- {here(names.to_os(path))}\n" for path in deleted)
    return (
        f"python3 -c 'import coverage' 2>/dev/null || {{ : > {COVERAGE_DIR}/{MISSING}; exit 0; }}\n"
        f"cd {here(workdir)} || exit 126\n"
        "root=$(pwd -P)\n"
        f'printf %s "$root" > {COVERAGE_DIR}/{ROOT}\n'
        f"cat > {rc} <<EOF\n{coveragerc(f'{COVERAGE_DIR}/data/{DATA_FILE}', '$root')}EOF\n"
        f"{removed}"
        f"export COVERAGE_PROCESS_START={rc}\n"
        f"export PYTHONPATH={COVERAGE_DIR}/hook${{PYTHONPATH:+:$PYTHONPATH}}\n"
        f"exec sh -c {here(command)}\n"
    )
