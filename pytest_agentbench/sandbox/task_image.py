"""Tasks that bring their own image (Harbor): the image built once per content of the task's
environment/, its working directory as the trial's workspace, and the task's verifier and
solution run in containers.

The agent's container bind-mounts a copy of the image's working directory at that directory,
so the host sees the workspace as for every other task. The verifier never runs in the agent's
container: once the agent's round has ended (the container stopped with every process in it),
the container is committed to a snapshot, and a fresh container from the snapshot gets a copy
of the final workspace, a copy of tests/ at /tests and an empty /logs/verifier; ``bash
/tests/test.sh`` runs there as the image's user, and the reward it leaves decides the trial.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench import fdtree
from pytest_agentbench.filework import remove_later
from pytest_agentbench.grading import VERIFIER_OUTPUT_LIMIT, Grade
from pytest_agentbench.sandbox.base import ProcessResult, make_trial_root
from pytest_agentbench.sandbox.ownership import owned_dir
from pytest_agentbench.tasks.model import ContainerSpec, DirTree, Task, TaskError

if TYPE_CHECKING:
    from pytest_agentbench.sandbox.docker import DockerProvider, DockerSandbox

IMAGE_REPOSITORY = "agentbench-task"  # built images: agentbench-task:env-<content hash>
TESTS_DIR = "/tests"
SOLUTION_DIR = "/solution"
REWARD_DIR = "/logs/verifier"
REWARD_FILES = ("reward.txt", "reward.json")  # read in this order, as Harbor's docs say


@dataclass(frozen=True)
class BuiltImage:
    """A task's image, ready to run: its tag, working directory and user, and a host copy of
    the working directory as the image holds it."""

    tag: str
    workdir: str
    user: str
    tree_root: Path

    @cached_property
    def tree(self) -> DirTree:
        """The working directory as a task tree (symlinks left out: trees hold none); one per
        image, so it is listed once."""
        return DirTree(self.tree_root, skip=lambda entry: entry.is_symlink())


_BUILT: dict[str, BuiltImage | TaskError] = {}  # per process: content hash -> image or error


def built_image(spec: ContainerSpec, client: Any = None) -> BuiltImage:
    """The task's image, built from its Dockerfile unless an image of that content exists
    (so once per content, across runs), its working directory copied out once per process; a
    build that failed is not tried again by the same process (each repeat errors alike)."""
    found = _BUILT.get(spec.context_hash)
    if isinstance(found, TaskError):
        raise found
    if found is not None:
        return found
    try:
        built = _prepare(spec, client)
    except TaskError as exc:
        _BUILT[spec.context_hash] = exc
        raise
    _BUILT[spec.context_hash] = built
    return built


def _prepare(spec: ContainerSpec, client: Any) -> BuiltImage:
    if client is None:
        from pytest_agentbench.sandbox.docker import connect

        client = connect()
    dockerfile = spec.context / "Dockerfile"
    tag = spec.image or f"{IMAGE_REPOSITORY}:env-{spec.context_hash[:24]}"
    config = _image_config(client, tag)
    if config is None:
        if spec.image is not None:
            raise TaskError(
                f"{spec.context.parent / 'task.toml'}: docker_image {tag!r} is not on the Docker "
                "engine; pull or build it first (no registry is asked during a run)"
            )
        _build(client, spec, tag, dockerfile)
        config = _image_config(client, tag) or {}
    workdir = config.get("WorkingDir") or ""
    if workdir in ("", "/"):
        where = dockerfile if spec.image is None else spec.context.parent / "task.toml"
        raise TaskError(
            f"{where}: the image {tag} has no working directory; the task's workspace is the "
            "image's WORKDIR (add `WORKDIR /app` to the Dockerfile)"
        )
    return BuiltImage(tag, workdir, config.get("User") or "", _copy_workdir(client, tag, workdir))


def _image_config(client: Any, tag: str) -> dict[str, Any] | None:
    import docker.errors

    try:
        config: dict[str, Any] = client.images.get(tag).attrs.get("Config") or {}
    except docker.errors.ImageNotFound:
        return None
    return config


def _build(client: Any, spec: ContainerSpec, tag: str, dockerfile: Path) -> None:
    """Build the image; a failure names the Dockerfile and shows the build's last lines."""
    import docker.errors
    import requests

    try:
        client.images.build(
            path=str(spec.context),
            tag=tag,
            rm=True,
            forcerm=True,
            pull=False,
            timeout=spec.build_timeout,
            labels={"io.agentbench.context-hash": spec.context_hash},
        )
    except docker.errors.BuildError as exc:
        lines = [str(step.get("stream") or step.get("error") or "") for step in exc.build_log]
        tail = "".join(lines).strip().splitlines()[-8:]
        raise TaskError(
            f"{dockerfile}: the image does not build ({exc.msg}); fix the Dockerfile (no "
            "registry may be reachable: base it on an image the engine has). Build output:\n"
            + "\n".join(tail)
        ) from None
    except docker.errors.APIError as exc:
        raise TaskError(f"{dockerfile}: the Docker engine refused the build: {exc}") from None
    except requests.exceptions.RequestException:
        raise TaskError(
            f"{dockerfile}: the image did not build within build_timeout_sec = "
            f"{spec.build_timeout:g} s (raise it in task.toml)"
        ) from None


def _copy_workdir(client: Any, tag: str, workdir: str) -> Path:
    """A host copy of the image's working directory, made once per process."""
    from pytest_agentbench.sandbox.docker import _replace_from_tar

    scratch = Path(tempfile.mkdtemp(prefix="agentbench-image-", dir=owned_dir()))
    atexit.register(shutil.rmtree, scratch, True)
    created = client.api.create_container(tag, ["true"], labels={"io.agentbench.copy": "1"})
    try:
        stream, _ = client.api.get_archive(created["Id"], workdir)
        target = scratch / "workdir"
        try:
            _replace_from_tar(stream, target)
        except Exception as exc:  # tarfile's filter refuses what it may not extract safely
            raise TaskError(
                f"the image {tag}: its working directory {workdir} cannot be copied out safely "
                f"({exc}); keep absolute symlinks and special files out of it"
            ) from None
    finally:
        client.api.remove_container(created["Id"], force=True)
    return target


def create_sandbox(provider: DockerProvider, task: Task, trial_id: str) -> DockerSandbox:
    """A trial's sandbox on the task's own image: a copy of its working directory, mounted at
    that directory, with the task's cpus, memory and internet access."""
    from pytest_agentbench.sandbox.docker import ROUND_SCRIPT_NAME, DockerSandbox

    spec = task.container
    assert spec is not None
    if not provider.bind_mounts:
        raise TaskError(
            f"{task.source}: a Harbor task needs a Docker engine on this machine (its workspace "
            "is mounted from here); unset DOCKER_HOST or point it at a local engine"
        )
    built = built_image(spec, provider.client)
    root = make_trial_root(trial_id)
    try:
        fdtree.copy_tree(str(built.tree_root), str(root / "workspace"))
        (root / "home").mkdir()
        (root / ROUND_SCRIPT_NAME).touch()
        container = provider.create_container(
            built.tag,
            trial_id,
            root,
            inner_workspace=built.workdir,
            limits=task_limits(provider, spec),
        )
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return DockerSandbox(provider, root, container, inner_workspace=built.workdir)


def task_limits(provider: DockerProvider, spec: ContainerSpec) -> Any:
    """The run's limits with the task's own cpus and memory, and no network where it has none."""
    limits = provider.limits
    return replace(
        limits,
        cpus=spec.cpus if spec.cpus is not None else limits.cpus,
        memory=str(spec.memory_bytes) if spec.memory_bytes is not None else limits.memory,
        network=limits.network if spec.network else "none",
    )


def run_solution(sandbox: DockerSandbox, task: Task, timeout: float) -> ProcessResult:
    """The oracle's round: solution/ copied to /solution, solve.sh run from the working
    directory as the agent would run a command."""
    spec = task.container
    assert spec is not None and spec.solution is not None
    sandbox.container.put_archive("/", sandbox.provider.tar({SOLUTION_DIR: spec.solution}))
    env = {"HOME": sandbox.inner_home, **host_values(spec, spec.solution_env, "solution")}
    return sandbox.run(["bash", spec.solve_script], env=env, timeout=timeout)


def host_values(spec: ContainerSpec, env: Mapping[str, str], section: str) -> dict[str, str]:
    """The variables with ${VAR} and ${VAR:-default} filled in from this machine's environment,
    as Harbor fills them (an API key for a model-graded verifier, say); a VAR that is not set
    and has no default is a TaskError naming it."""

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name, default)
        if found is None:
            raise TaskError(
                f"{spec.context.parent / 'task.toml'}: [{section}] env needs ${{{name}}}, which "
                f"is not set here; export {name} (or write ${{{name}:-default}})"
            )
        return found

    return {key: _TEMPLATE.sub(value, text) for key, text in env.items()}


_TEMPLATE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def verify(sandbox: DockerSandbox, task: Task) -> Grade:
    """Run the task's tests on a snapshot of the finished container; exact when reward is 1."""
    spec = task.container
    assert spec is not None
    provider = sandbox.provider
    client = provider.client
    built = built_image(spec, client)
    snapshot = sandbox.container.commit(conf={"Labels": {"io.agentbench.snapshot": "1"}})
    scratch = Path(tempfile.mkdtemp(prefix="agentbench-verify-", dir=owned_dir()))
    try:
        workspace, tests, logs = scratch / "workspace", scratch / "tests", scratch / "logs"
        fdtree.copy_tree(str(sandbox.workspace), str(workspace))
        shutil.copytree(spec.tests, tests, symlinks=True)
        logs.mkdir()
        for copy in (workspace, tests, logs):
            _open_to_all(copy)  # the image's user, who runs the tests, may be anyone
        limits = task_limits(provider, spec)
        binds = {
            str(workspace): {"bind": built.workdir, "mode": "rw"},
            str(tests): {"bind": TESTS_DIR, "mode": "rw"},
            str(logs): {"bind": REWARD_DIR, "mode": "rw"},
        }
        exit_code, output = _run_verifier(provider, snapshot.id, built, spec, binds, limits, task)
        reward, where = read_reward(logs)
    finally:
        with contextlib.suppress(Exception):
            client.images.remove(snapshot.id, force=True)
        remove_later(scratch)
    passed = reward is not None and math.isclose(reward, 1.0)
    shown = f"reward {reward:g} ({where})" if reward is not None else where
    text = f"{shown}\n{output}"[-VERIFIER_OUTPUT_LIMIT:]
    return Grade(
        exact=passed,
        eof_normalized=passed,
        verifier_exit_code=exit_code,
        verifier_output=text,
        reward=reward,
        reward_graded=True,
    )


def _open_to_all(root: Path) -> None:
    """Let every user read and write a scratch copy (its modes are never graded)."""
    os.chmod(root, 0o777)
    for dirpath, dirnames, filenames in os.walk(root):  # symlinks are neither followed nor changed
        for name in dirnames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, 0o777)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, os.lstat(path).st_mode | 0o666)


def _run_verifier(
    provider: DockerProvider,
    image: str,
    built: BuiltImage,
    spec: ContainerSpec,
    binds: dict[str, dict[str, str]],
    limits: Any,
    task: Task,
) -> tuple[int | None, str]:
    """(exit code or None at the deadline, the output's tail) of bash /tests/test.sh."""
    import docker.errors
    import requests

    from pytest_agentbench.sandbox.docker import LABEL_OWNER, LABEL_RUN, trial_host_config

    api = provider.client.api
    host_config = trial_host_config(api, limits, binds)
    created = api.create_container(
        image,
        ["bash", spec.test_script],
        user=built.user or "0",
        working_dir=built.workdir,
        environment=host_values(spec, spec.verifier_env, "verifier"),
        labels={LABEL_OWNER: provider.owner, LABEL_RUN: provider.run_id},
        host_config=host_config,
    )
    container = provider.client.containers.prepare_model({"Id": created["Id"]})
    provider.live[container.id] = container
    timeout = task.verify_timeout or task.timeout
    try:
        container.start()
        try:
            exit_code: int | None = int(api.wait(container.id, timeout=timeout)["StatusCode"])
        except requests.exceptions.RequestException:
            with contextlib.suppress(docker.errors.APIError):
                api.kill(container.id)
            exit_code = None
        output = api.logs(container.id, stdout=True, stderr=True)[-VERIFIER_OUTPUT_LIMIT:]
    finally:
        provider.remove(container)
    text = output.decode("utf-8", "replace")
    if exit_code is None:
        text += f"\nverifier timed out after {timeout:g} s (timeout_sec in [verifier])"
    return exit_code, text


def read_reward(logs: Path) -> tuple[float | None, str]:
    """(the reward, where it came from): reward.txt's number, else reward.json's "reward";
    None, saying why, when neither holds one."""
    text_file, json_file = (logs / name for name in REWARD_FILES)
    if text_file.is_file():
        raw = text_file.read_text(encoding="utf-8", errors="replace").strip()
        try:
            return float(raw), f"{REWARD_DIR}/{text_file.name}"
        except ValueError:
            return None, f"{REWARD_DIR}/{text_file.name} holds no number: {raw[:80]!r}"
    if json_file.is_file():
        try:
            value = json.loads(json_file.read_text(encoding="utf-8")).get("reward")
        except (ValueError, AttributeError):
            value = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value), f"{REWARD_DIR}/{json_file.name}"
        return None, f'{REWARD_DIR}/{json_file.name} holds no numeric "reward"'
    return None, f"no reward: the verifier wrote neither {REWARD_DIR}/reward.txt nor reward.json"
