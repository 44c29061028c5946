"""Tasks that bring their own image (Harbor): the image built once per content of the task's
environment/, its working directory as the trial's workspace, and the task's verifier and
solution run in containers, as Harbor runs them.

The agent and solve.sh run as the image's USER (root when the Dockerfile sets none) or as the
task's [agent] user, with the engine's default capabilities but no new privileges, and the
trial's limits. The working directory stays inside the container, with the owners and modes the
image gave it: nothing the agent writes (as root, say) lands in a host directory. After each
round the host's copy of the workspace and of the agent's home is refreshed from the stopped
container (owned by whoever runs the harness). The verifier never runs in the agent's
container: once the agent's round has ended (the container stopped with every process in it),
the container is committed to a snapshot, and a fresh container from the snapshot gets tests/
at /tests and an empty /logs/verifier; ``bash /tests/test.sh`` runs there as the image's USER
or the task's [verifier] user, and the reward it leaves, copied out, decides the trial.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import re
import shutil
import tarfile
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from pytest_agentbench.fs import fdtree
from pytest_agentbench.sandbox.base import ProcessResult, Sandbox, make_trial_root
from pytest_agentbench.sandbox.docker import (
    INNER_HOME,
    LABEL_OWNER,
    LABEL_RUN,
    LABEL_TRIAL,
    ROUND_SCRIPT,
    ROUND_SCRIPT_NAME,
    ArchiveTooLarge,
    DockerProvider,
    DockerSandbox,
    _replace_from_tar,
    _tar_dirs,
    engine_errors,
    trial_host_config,
)
from pytest_agentbench.sandbox.engines import Engine
from pytest_agentbench.sandbox.ownership import owned_dir
from pytest_agentbench.settings import SandboxLimits
from pytest_agentbench.tasks.model import (
    ContainerSpec,
    DirTree,
    Task,
    TaskError,
    read_image_trees_with,
)

IMAGE_REPOSITORY = "agentbench-task"  # built images: agentbench-task:env-<content hash>
SOLUTION_DIR = "/solution"
LOGS_DIR = "/logs"  # an empty tmpfs while the agent works: nothing it leaves there is graded


@dataclass(frozen=True)
class BuiltImage:
    """A task's image, ready to run: its tag, working directory and user, and a host copy of
    the working directory as the image holds it."""

    tag: str
    workdir: str
    user: str
    tree_root: Path
    passwd: str = ""  # the image's /etc/passwd and /etc/group, to resolve a user's ids
    group: str = ""

    def ids(self, user: str, where: str) -> tuple[int, int]:
        """(uid, gid) of user ("name", "uid", "name:group"; "" for the image's USER) as the
        engine resolves it in this image; an unknown name is a TaskError naming where it was
        set."""
        who, _, group = (user or self.user or "0").partition(":")
        accounts = {r[0]: (int(r[2]), int(r[3])) for r in _rows(self.passwd, 4)}
        if who.isdigit():
            uid = int(who)
            gid = next((g for u, g in accounts.values() if u == uid), 0)
        elif who in accounts:
            uid, gid = accounts[who]
        else:
            raise TaskError(f"{where}: user {who!r} is not in the image {self.tag}'s /etc/passwd")
        if group:
            groups = {r[0]: int(r[2]) for r in _rows(self.group, 3)}
            if not group.isdigit() and group not in groups:
                raise TaskError(
                    f"{where}: group {group!r} is not in the image {self.tag}'s /etc/group"
                )
            gid = int(group) if group.isdigit() else groups[group]
        return uid, gid

    @cached_property
    def tree(self) -> DirTree:
        """The working directory as a task tree (symlinks left out: trees hold none); one per
        image, so it is listed once."""
        return DirTree(self.tree_root, skip=lambda entry: entry.is_symlink())


# Per process. An image is prepared on each engine once per content (built there, or found
# there), each under its own lock: concurrent trials of one content on one engine wait for the
# one build, while other contents and other engines build meanwhile. The host copy of the
# working directory is made once per content, from the first engine that has the image.
_BUILT: dict[tuple[str, str], BuiltImage | TaskError] = {}  # (engine, content hash) -> image
_COPIES: dict[str, tuple[Path, str, str]] = {}  # content hash -> workdir copy, passwd, group
_BUILDING: dict[tuple[str, str] | str, threading.Lock] = {}  # held while that is prepared
_BUILDING_LOCK = threading.Lock()  # guards _BUILDING


def _lock(key: tuple[str, str] | str) -> threading.Lock:
    with _BUILDING_LOCK:
        return _BUILDING.setdefault(key, threading.Lock())


def built_image(spec: ContainerSpec, engine: Engine | None = None) -> BuiltImage:
    """The task's image on engine (DOCKER_HOST's when None), built from its Dockerfile unless
    an image of that content is there (so once per content and engine, across runs), or an
    instance's image required there; a build that failed is not tried again on that engine by
    the same process (each repeat errors alike). An engine that does not answer raises what
    the Docker SDK raises, for the caller's engine_errors; nothing of it is kept."""
    engine = engine or _default_engine()
    key = (engine.spec.name, spec.context_hash)
    with _lock(key):
        found = _BUILT.get(key)
        if found is None:
            try:
                found = _prepare(spec, engine)
            except TaskError as exc:
                found = exc
            _BUILT[key] = found
    if isinstance(found, TaskError):
        raise found
    return found


def read_tree(spec: ContainerSpec) -> DirTree:
    """A container task's input tree: the host copy of its image's working directory, from
    whichever engine made it first, else made now on the reading engine."""
    made = [b for (_, h), b in list(_BUILT.items()) if h == spec.context_hash]
    copied = next((b for b in made if isinstance(b, BuiltImage)), None)
    return (copied or built_image(spec, _READER[0] if _READER else None)).tree


_READER: list[Engine] = []  # the engine input trees are read from: the run's first
_DEFAULT: list[Engine] = []  # DOCKER_HOST's engine, connected when first needed


def _default_engine() -> Engine:
    if not _DEFAULT:
        from pytest_agentbench.sandbox.docker import single_engine

        _DEFAULT.append(single_engine())
    return _DEFAULT[0]


read_image_trees_with(read_tree)


def _prepare(spec: ContainerSpec, engine: Engine) -> BuiltImage:
    client = engine.client
    on = f"the Docker engine {engine.spec.name}"
    dockerfile = spec.context / "Dockerfile"
    tag = spec.image or f"{IMAGE_REPOSITORY}:env-{spec.context_hash[:24]}"
    config = _image_config(client, tag)
    if config is None:
        context = engine.spec.context
        there = f"--context {context}" if context else f"-H {engine.spec.name}"
        load = f"`docker save {tag} | docker {there} load` it from another engine"
        if spec.instance is not None:
            raise TaskError(
                f"{spec.origin}: the instance's image {tag!r} is not on {on}; pull or build it "
                f"there first (swebench's prepare_images), {load}, give the line an `image` "
                "field, or name your registry's images with --swebench-images (no registry is "
                "asked during a run)"
            )
        if spec.image is not None:
            raise TaskError(
                f"{spec.context.parent / 'task.toml'}: docker_image {tag!r} is not on {on}; "
                f"pull or build it there first, or {load} (no registry is asked during a run)"
            )
        _build(client, spec, tag, dockerfile)
        config = _image_config(client, tag) or {}
    workdir = spec.workdir or config.get("WorkingDir") or ""
    if workdir in ("", "/"):
        where = dockerfile if spec.image is None else spec.context.parent / "task.toml"
        raise TaskError(
            f"{where}: the image {tag} has no working directory; the task's workspace is the "
            "image's WORKDIR (add `WORKDIR /app` to the Dockerfile)"
        )
    with _lock(spec.context_hash):
        if spec.context_hash not in _COPIES:
            _COPIES[spec.context_hash] = _copy_out(client, tag, workdir)
        tree_root, passwd, group = _COPIES[spec.context_hash]
    return BuiltImage(tag, workdir, config.get("User") or "", tree_root, passwd, group)


def _rows(table: str, fields: int) -> list[list[str]]:
    """The rows of /etc/passwd or /etc/group with at least `fields` fields and numeric ids."""
    rows = [line.split(":") for line in table.splitlines()]
    return [r for r in rows if len(r) >= fields and all(f.isdigit() for f in r[2:fields])]


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
    except requests.exceptions.ReadTimeout:  # no answer at all is the engine's, not the task's
        raise TaskError(
            f"{dockerfile}: the image did not build within build_timeout_sec = "
            f"{spec.build_timeout:g} s (raise it in task.toml)"
        ) from None


def _copy_out(client: Any, tag: str, workdir: str) -> tuple[Path, str, str]:
    """A host copy of the image's working directory, and its /etc/passwd and /etc/group, made
    once per process."""
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
        passwd, group = (_read_text(client.api, created["Id"], f"/etc/{n}") for n in NAMES)
    finally:
        client.api.remove_container(created["Id"], force=True)
    return target, passwd, group


NAMES = ("passwd", "group")


def _read_text(api: Any, container_id: str, path: str) -> str:
    """A small text file of a container ("" when it has none)."""
    import docker.errors

    try:
        stream, _ = api.get_archive(container_id, path)
    except docker.errors.NotFound:
        return ""
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
        member = archive.next()
        handle = archive.extractfile(member) if member is not None else None
        return handle.read().decode("utf-8", "replace") if handle is not None else ""


def _keep_links(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's data filter for a workspace the agent left, except that a symlink is kept
    wherever it points (a virtualenv's python -> /usr/bin/python3; nothing is extracted through
    it, since every member's real path must stay inside) and a special file (a FIFO) is left
    out instead of failing the round."""
    if member.isfifo() or member.isdev():
        return None
    if not member.issym():
        return tarfile.data_filter(member, dest)
    checked = tarfile.data_filter(member.replace(linkname=".", deep=False), dest)
    return checked.replace(linkname=member.linkname, deep=False)


class ImageSandbox(DockerSandbox):
    """A Harbor trial's container: the workspace lives in it as the image made it, the agent's
    home and solution/ are copied in owned by the agent's user, and the host's copies are
    refreshed from the container after each round."""

    def __init__(
        self,
        provider: DockerProvider,
        root: Path,
        container: Any,
        built: BuiltImage,
        agent_ids: tuple[int, int],
        engine: Engine | None = None,
        placed: str | None = None,
    ) -> None:
        super().__init__(provider, root, container, built.workdir, engine, placed)
        self.agent_ids = agent_ids
        self.too_large = 0  # bytes of the last round's trees when they were not copied out

    def _hand_over(self) -> None:
        """The agent's home, owned by the agent; the round script root's and readable by
        whoever the agent is (bind-mounted read-only, or copied in by an engine elsewhere)."""
        self.script.chmod(0o644)
        self.put({INNER_HOME: self.home})
        if not self.provider.bind_mounts:
            self.container.put_archive("/", _tar_dirs({ROUND_SCRIPT: self.script}, 0, 0))

    def _take_back(self) -> None:
        """The host copies become what the round left; a workspace or home the agent removed,
        or replaced with a symlink or a file, comes back as an empty directory. A tree larger
        than --sandbox-disk is not copied (this machine's disk is not the agent's to fill):
        the round then counts as over the limit."""
        import docker.errors

        self.too_large = 0
        for inner, host in ((self.inner_workspace, self.workspace), (INNER_HOME, self.home)):
            try:
                stream = self.container.get_archive(inner)[0]
                _replace_from_tar(stream, host, _keep_links, self.provider.limits.disk)
            except docker.errors.NotFound:  # the agent removed the tree
                fdtree.remove_tree(str(host))
            except ArchiveTooLarge as exc:
                self.too_large += exc.size
            if host.is_symlink() or not host.is_dir():
                fdtree.remove_tree(str(host))
                host.mkdir()

    def disk_used(self) -> int:
        return self.too_large or super().disk_used()

    def put(self, dirs: dict[str, Path]) -> None:
        """Copy host directories into the container at these paths, owned by the agent."""
        self.container.put_archive("/", _tar_dirs(dirs, *self.agent_ids))


def create_sandbox(provider: DockerProvider, task: Task, trial_id: str) -> DockerSandbox:
    """A trial's sandbox on the task's own image, on the engine the pool places it on (built
    or found there), run as its agent user, with the task's cpus, memory and internet access;
    the host keeps a copy of the working directory."""
    spec = task.container
    assert spec is not None
    engine, placed = provider.place(trial_id)
    root = None
    try:
        with engine_errors("preparing the task's image", provider.lost(engine)):
            built = built_image(spec, engine)
        agent_ids = built.ids(spec.agent_user, where_set(spec, spec.agent_user, "agent"))
        root = make_trial_root(trial_id)
        fdtree.copy_tree(str(built.tree_root), str(root / "workspace"))
        (root / "home").mkdir()
        (root / ROUND_SCRIPT_NAME).touch()
        volumes, tmpfs = provider.shared_mounts()
        if provider.bind_mounts:
            volumes[str(root / ROUND_SCRIPT_NAME)] = {"bind": ROUND_SCRIPT, "mode": "ro"}
        api = engine.client.api
        with engine_errors("creating the trial's container", provider.lost(engine)):
            host_config = trial_host_config(
                api,
                task_limits(provider, spec),
                volumes,
                tmpfs={**tmpfs, LOGS_DIR: "size=64m,mode=1777"},
            )
            created = api.create_container(
                built.tag,
                ["/bin/sh", ROUND_SCRIPT],
                user=spec.agent_user or built.user or "0",
                working_dir=built.workdir,
                labels={
                    LABEL_OWNER: provider.owner,
                    LABEL_RUN: provider.run_id,
                    LABEL_TRIAL: trial_id,
                },
                host_config=host_config,
            )
        container = provider.track(created, engine.client)
    except BaseException:
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)
        if placed is not None:
            provider.release(placed)
        raise
    return ImageSandbox(provider, root, container, built, agent_ids, engine, placed)


class TaskImageProvider(DockerProvider):
    """The Docker provider of a run: plain tasks in the run's image, as DockerProvider runs
    them, and a task that brings its own image (Harbor, SWE-bench) in a container of that
    image on the engine the trial is placed on."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _READER[:] = [self.engines[0]]  # input trees read before any trial: the first engine

    def create(self, task: Task, trial_id: str) -> Sandbox:
        if task.container is not None:
            return create_sandbox(self, task, trial_id)
        return super().create(task, trial_id)


def where_set(spec: ContainerSpec, user: str, phase: str) -> str:
    """Where the user of the agent or verifier phase is set: task.toml, else the Dockerfile."""
    if user:
        return f"{spec.context.parent / 'task.toml'}: [{phase}] user"
    return f"{spec.context / 'Dockerfile'}: USER"


def task_limits(provider: DockerProvider, spec: ContainerSpec) -> Any:
    """The run's limits with the task's own cpus and memory, and no network where it has none."""
    limits = provider.limits
    return replace(
        limits,
        cpus=spec.cpus if spec.cpus is not None else limits.cpus,
        memory=str(spec.memory_bytes) if spec.memory_bytes is not None else limits.memory,
        network=limits.network if spec.network else "none",
    )


def run_as_verifier(
    provider: DockerProvider,
    engine: Engine,
    image: str,
    spec: ContainerSpec,
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    limits: SandboxLimits,
    timeout: float,
    put: Mapping[str, Path],
    take: Mapping[str, Path],
) -> tuple[int | None, bytes]:
    """(exit code, None when it was killed at timeout; its output) of argv run once in a fresh
    container of image (the task's, or a snapshot of a trial's) on engine (the one the trial
    ran on: a snapshot is there, and the task's image), as Harbor runs its tests: as
    the verifier's user, from the working directory. The host trees of put are copied in first,
    owned by that user; once it has stopped, each container path of take that exists is copied
    out to its host path. The container carries its owner's labels and is removed."""
    import docker.errors
    import requests

    api = engine.client.api
    built = built_image(spec, engine)
    ids = built.ids(spec.verifier_user, where_set(spec, spec.verifier_user, "verifier"))
    created = api.create_container(
        image,
        list(argv),
        user=spec.verifier_user or built.user or "0",
        working_dir=built.workdir,
        environment=dict(env),
        labels={LABEL_OWNER: provider.owner, LABEL_RUN: provider.run_id},
        host_config=trial_host_config(api, limits, {}),
    )
    container = provider.track(created, engine.client)
    try:
        container.put_archive("/", _tar_dirs(put, *ids))
        container.start()
        try:
            exit_code: int | None = int(api.wait(container.id, timeout=timeout)["StatusCode"])
        except requests.exceptions.RequestException:
            with contextlib.suppress(docker.errors.APIError):
                api.kill(container.id)
            exit_code = None
        output: bytes = api.logs(container.id, stdout=True, stderr=True)
        for inner, host in take.items():
            with contextlib.suppress(docker.errors.NotFound, tarfile.TarError):
                stream, _ = api.get_archive(container.id, inner)
                _replace_from_tar(stream, host)
    finally:
        provider.remove(container)
    return exit_code, output


def run_solution(sandbox: DockerSandbox, task: Task, timeout: float) -> ProcessResult:
    """The oracle's round: solution/ copied to /solution, solve.sh run from the working
    directory as the agent would run a command."""
    spec = task.container
    assert spec is not None and spec.solution is not None
    assert isinstance(sandbox, ImageSandbox)
    sandbox.put({SOLUTION_DIR: spec.solution})
    env = {"HOME": sandbox.inner_home, **host_values(spec, spec.solution_env, "solution")}
    return sandbox.run(["bash", spec.solve_script], env=env, timeout=timeout)


PATCH_DIR = "/tmp/agentbench-oracle"


def apply_instance_patch(sandbox: DockerSandbox, task: Task, timeout: float) -> ProcessResult:
    """The oracle's round on a SWE-bench instance: its reference `patch` applied with git in
    the repository, as the agent would change it."""
    spec = task.container
    assert spec is not None and spec.instance is not None
    assert isinstance(sandbox, ImageSandbox)
    scratch = Path(tempfile.mkdtemp(prefix="agentbench-oracle-", dir=owned_dir()))
    try:
        (scratch / "patch.diff").write_text(str(spec.instance["patch"]), encoding="utf-8")
        sandbox.put({PATCH_DIR: scratch})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    argv = ["git", "-c", "safe.directory=*", "apply", "--verbose", f"{PATCH_DIR}/patch.diff"]
    return sandbox.run(argv, env={"HOME": sandbox.inner_home}, timeout=timeout)


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
