"""The docker sandbox: a fresh container per trial, driven through the Docker SDK for Python.

The container's command is the current round (its argv, environment and cwd in a small script):
each round starts the container, and the round ends with it stopped, by itself when the agent
exits (its init process goes, and every process left in the container with it) or killed at the
deadline, so nothing the agent started keeps running while the parent grades the workspace.
Recovery rounds start the same container again, so its own files (/tmp) carry over. Containers are
labelled with their owner process, so a later run can remove what a dead run left behind, and
never touches containers it did not create.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import shlex
import shutil
import tarfile
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.fs import fdtree
from pytest_agentbench.sandbox.base import (
    DOCKER_ENGINE,
    LIVE_ROUNDS,
    OUTPUT_TAIL,
    InfrastructureError,
    ProcessResult,
    Sandbox,
    SandboxProvider,
    make_trial_root,
    within,
)
from pytest_agentbench.sandbox.bwrap import install_root
from pytest_agentbench.sandbox.engines import (
    Engine,
    EngineSpec,
    default_engine,
    engine_silent,
    pool_engines,
)
from pytest_agentbench.sandbox.ownership import owner_is_dead, owner_token
from pytest_agentbench.sandbox.placement import Placement
from pytest_agentbench.settings import SandboxLimits
from pytest_agentbench.tasks.model import Task, materialize

INNER_WORKSPACE = "/workspace"
INNER_HOME = "/home/agent"
LABEL_OWNER = "io.agentbench.owner"  # host:pid:start-time of the process that created it
LABEL_RUN = "io.agentbench.run"
LABEL_TRIAL = "io.agentbench.trial"
LABEL_SNAPSHOT = "io.agentbench.snapshot"  # an image committed from a trial's container
IMAGE_USER = 1000  # the unprivileged user the agent runs as when the host side is root
PROGRAMS_DIR = "/opt/agentbench/programs"  # host-installed agent CLIs, mounted read-only
ROUND_SCRIPT = "/opt/agentbench/round.sh"  # the container's command: the current round
ROUND_SCRIPT_NAME = "round.sh"  # beside workspace/ and home/ on the host
# Two log files of 8 MB at most: room for the output tail (OUTPUT_TAIL) even when the log's
# per-line overhead is 30 times the line.
LOG_BOUND = {"max-size": "8m", "max-file": "2"}


def run_label() -> str:
    """One id for the whole run: xdist hands every worker the controller's test-run uid."""
    return os.environ.get("PYTEST_XDIST_TESTRUNUID") or owner_token()


@contextlib.contextmanager
def engine_errors(what: str, lost: Any = None) -> Iterator[None]:
    """An error the engine answers, or no answer from it, is the machine's: an infrastructure
    failure of the trial, never the agent's result. lost(error, answered) hears of each
    (answered: the engine answered with an error, rather than not at all)."""
    import docker.errors
    import requests

    try:
        yield
    except (
        docker.errors.APIError,
        requests.exceptions.ConnectionError,
        requests.exceptions.ChunkedEncodingError,  # a stream (a build's, logs) cut off midway
        requests.exceptions.Timeout,
    ) as error:
        if lost is not None:
            lost(isinstance(error, docker.errors.APIError))
        raise InfrastructureError(DOCKER_ENGINE, f"{what}: {error}") from None


def _socket_refused(where: str) -> str | None:
    """Why this user may not talk to a local engine's socket (it exists, but its mode and group
    keep this user out), or None."""
    path = where.removeprefix("unix://")
    if not where.startswith("unix://") or not os.path.exists(path):
        return None
    if os.access(path, os.R_OK | os.W_OK):
        return None
    import grp
    import pwd

    gid, uid = os.stat(path).st_gid, os.getuid()
    try:
        group = grp.getgrgid(gid).gr_name
    except KeyError:
        group = str(gid)
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    return (
        f"user {user} may not use the Docker engine at {where}: the socket belongs to the "
        f"{group} group; add the user to it (`sudo usermod -aG {group} {user}`, then log in "
        "again)"
    )


def connect() -> Any:
    """A client for the engine DOCKER_HOST names (the local one without it), or a usage error
    that says how to get one."""
    try:
        import docker
        import docker.errors
    except ImportError:
        raise pytest.UsageError(
            "--sandbox=docker needs the Docker SDK for Python: pip install docker"
        ) from None
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    refused = _socket_refused(where)
    if refused:
        raise pytest.UsageError(f"--sandbox=docker: {refused}; or choose --sandbox=bwrap/tmp")
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        raise pytest.UsageError(
            f"--sandbox=docker: no Docker engine answers at {where} ({exc}). Start it "
            "(`sudo systemctl start docker`, or `sudo dockerd &`), point DOCKER_HOST at a "
            "running engine, or choose --sandbox=bwrap/tmp"
        ) from None
    return client


def single_engine() -> Engine:
    """The one engine of a run without --docker-host: DOCKER_HOST's, no placement."""
    where = default_engine()
    client = connect()
    return Engine(EngineSpec(where, where, where), client, None, client.version().get("Version"))


def trial_host_config(
    api: Any, limits: SandboxLimits, binds: Mapping[str, Any], **extra: Any
) -> Any:
    """What every container of a trial runs under: an init, the trial's network, cpu, memory
    and pids limits, no new privileges, these binds, and a bounded log. Each round's output is
    read back from the log: the engine's own file driver, whatever the daemon's default is,
    rotated so that an agent flooding its output costs neither the engine's disk nor this
    process's memory more than LOG_BOUND."""
    return api.create_host_config(
        init=True,
        network_mode="none" if limits.network == "none" else "host",
        nano_cpus=int(limits.cpus * 1e9),
        mem_limit=limits.memory_bytes,
        memswap_limit=limits.memory_bytes,
        pids_limit=limits.pids,
        security_opt=["no-new-privileges"],
        binds=dict(binds),
        log_config={"Type": "json-file", "Config": LOG_BOUND},
        **extra,
    )


def dead_owner_containers(client: Any) -> list[Any]:
    """Containers this project made whose owning process on this host is gone."""
    # A container another run removes between the listing and its inspection is gone: skip it.
    listed = client.containers.list(all=True, filters={"label": LABEL_OWNER}, ignore_removed=True)
    return [c for c in listed if owner_is_dead(c.labels.get(LABEL_OWNER, ""))]


def dead_owner_snapshots(client: Any) -> list[Any]:
    """Snapshot images (a Harbor trial's finished container, for its tests) whose owning
    process on this host is gone: a run killed before it removed them. A snapshot holds the
    agent's files, so it does not outlive its run. Built task images are a cache, not these."""
    import docker.errors

    found = []
    # Listed raw: the SDK's images.list inspects every image it lists, and fails on one
    # another run removes in between (every docker run reaps); such a one is gone: skip it.
    for entry in client.api.images(filters={"label": LABEL_SNAPSHOT}):
        if owner_is_dead((entry.get("Labels") or {}).get(LABEL_OWNER, "")):
            with contextlib.suppress(docker.errors.NotFound):
                found.append(client.images.get(entry["Id"]))
    return found


def reap_dead_owners(client: Any) -> list[str]:
    """Remove containers and snapshot images whose owning process on this host is gone;
    return their names (an image's short id)."""
    import docker.errors

    removed = []
    for container in dead_owner_containers(client):
        with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
            container.remove(force=True)
            removed.append(container.name)
    for image in dead_owner_snapshots(client):
        with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
            client.images.remove(image.id, force=True)
            removed.append(image.short_id)
    return removed


def _tar_dirs(dirs: Mapping[str, Path], uid: int, gid: int) -> bytes:
    """A tar of host dirs placed at container paths, owned by the agent's user."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:

        def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
            return info

        for inner, host in dirs.items():
            archive.add(str(host), arcname=inner.lstrip("/"), filter=owned)
    return buffer.getvalue()


class ArchiveTooLarge(Exception):
    """A get_archive stream passed the byte limit it was read with; nothing was extracted."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def _replace_from_tar(
    chunks: Any, host_dir: Path, member_filter: Any = "data", limit: int | None = None
) -> None:
    """Make host_dir hold exactly the tree of a get_archive stream (whose top is the dir),
    extracted through tarfile's member_filter. A stream past limit bytes is read to its end
    (the engine's connection is then free) but not kept: ArchiveTooLarge, host_dir as it was."""
    with tempfile.TemporaryDirectory(dir=host_dir.parent) as scratch:
        with tempfile.TemporaryFile(dir=scratch) as data:  # on disk: memory stays flat
            size = 0
            for chunk in chunks:
                size += len(chunk)
                if limit is None or size <= limit:
                    data.write(chunk)
            if limit is not None and size > limit:
                raise ArchiveTooLarge(size)
            data.seek(0)
            with tarfile.open(fileobj=data) as archive:
                archive.extractall(scratch, filter=member_filter)
        (extracted,) = Path(scratch).iterdir()
        fdtree.remove_tree(str(host_dir))
        extracted.rename(host_dir)


def round_script(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> str:
    """The shell script a round's container start runs: the environment, cwd and argv of
    the round (an exec would take them as arguments, but a container's command is fixed)."""
    exports = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in env.items())
    command = " ".join(shlex.quote(arg) for arg in argv)
    return f"{exports}cd {shlex.quote(cwd)} || exit 126\nexec {command}\n"


def _daemon_time(stamp: str) -> float:
    """Seconds since the epoch of an engine timestamp (RFC 3339 with nanoseconds)."""
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    seconds = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    return seconds + float(f"0.{fraction or 0}")


class DockerSandbox(Sandbox):
    """One trial's container, with workspace/ and home/ bind-mounted or copied in and out.

    The container's command is the round script: each round writes it and starts the
    container, which stops by itself when the agent's process ends (the init process exits
    and takes every process left in the container with it), or is killed at the deadline.
    """

    kind = "docker"

    def __init__(
        self,
        provider: DockerProvider,
        root: Path,
        container: Any,
        inner_workspace: str = INNER_WORKSPACE,
        engine: Engine | None = None,
        placed: str | None = None,
    ) -> None:
        self.provider = provider
        self._lay_out(root, inner_workspace, INNER_HOME)  # home beside it: the engine mounts it
        self.container = container
        self.engine_of = engine or provider.engines[0]
        self.engine = self.engine_of.spec.name if provider.placing is not None else None
        self.placed = placed  # the trial id holding a slot of the pool's placement
        self.script = root / ROUND_SCRIPT_NAME
        self.rounds = 0
        _SANDBOXES[self.workspace] = self

    def _output(self, since: float | None) -> tuple[bytes, bytes]:
        """This round's stdout and stderr tails (earlier rounds' lines are older than since)."""
        api, cid = self.container.client.api, self.container.id
        extra = {} if since is None else {"since": since}
        out = api.logs(cid, stdout=True, stderr=False, **extra)
        err = api.logs(cid, stdout=False, stderr=True, **extra)
        return out[-OUTPUT_TAIL:], err[-OUTPUT_TAIL:]

    def _wait(self, timeout: float) -> int | None:
        """The exit status of the round, or None when it was killed at the deadline. Returns
        only once the container has stopped: a kill is answered when it has."""
        import docker.errors
        import requests

        api, cid = self.container.client.api, self.container.id
        try:
            return int(api.wait(cid, timeout=max(timeout, 0.001))["StatusCode"])
        except requests.exceptions.RequestException:
            try:
                api.kill(cid)
            except docker.errors.APIError:  # it stopped meanwhile
                api.wait(cid, timeout=30)
            return None

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        timeout: float,
        cwd: str | None = None,
    ) -> ProcessResult:
        start = time.monotonic()
        provider = self.provider
        self.script.write_text(round_script(argv, env, cwd or self.inner_workspace))
        exit_code: int | None = None
        with engine_errors("the trial's container", provider.lost(self.engine_of)):
            try:
                self._hand_over()
                with LIVE_ROUNDS.running(lambda: provider.kill(self.container)):
                    self.container.start()
                    exit_code = self._wait(timeout - (time.monotonic() - start))
            except BaseException:
                provider.kill(self.container)  # interrupted: nothing keeps running
                raise
            since = None
            if self.rounds:
                state = self.container.client.api.inspect_container(self.container.id)["State"]
                since = _daemon_time(state["StartedAt"])
            self.rounds += 1
            out, err = self._output(since)
            self._take_back()
        return ProcessResult(exit_code, exit_code is None, time.monotonic() - start, out, err)

    def _hand_over(self) -> None:
        """Before a round: the adapter may have written new files (its config, the prompt)
        into home, and the round script is new."""
        provider = self.provider
        if provider.bind_mounts:
            provider.give_to_agent(self.home)
            provider.give_to_agent(self.script)
        else:
            files = {INNER_HOME: self.home, ROUND_SCRIPT: self.script}
            self.container.put_archive("/", provider.tar(files))

    def _take_back(self) -> None:
        """After a round: the host's workspace and home hold what the round left (bind mounts
        already do)."""
        if not self.provider.bind_mounts:
            _replace_from_tar(self.container.get_archive(self.inner_workspace)[0], self.workspace)
            _replace_from_tar(self.container.get_archive(INNER_HOME)[0], self.home)

    def close(self) -> None:
        _SANDBOXES.pop(self.workspace, None)
        try:
            self.provider.remove(self.container)
        finally:
            if self.placed is not None:
                self.provider.release(self.placed)
            self._remove_files_later()


# Live sandboxes by host workspace: a task graded inside its container (Harbor) finds its
# container from the workspace the grading hook is given. Concurrent trials each add and drop
# their own key, which a dict does atomically: no lock.
_SANDBOXES: dict[Path, DockerSandbox] = {}


def sandbox_of(workspace: Path) -> DockerSandbox | None:
    """The live docker sandbox whose host workspace this is, if any."""
    return _SANDBOXES.get(workspace)


class DockerProvider(SandboxProvider):
    kind = "docker"
    nested_sandbox = False  # no capabilities and the engine's seccomp profile: no namespaces

    def __init__(
        self,
        limits: SandboxLimits,
        image: str | None,
        *,
        bind_mounts: bool | None = None,
        hosts: Sequence[str] = (),
    ) -> None:
        self.limits = limits
        self.image = image
        # hosts (--docker-host): a pool, each trial placed on one of its engines; else the one
        # engine DOCKER_HOST names, as many trials at once as the run puts in flight.
        self.engines = pool_engines(hosts, limits) if hosts else [single_engine()]
        self.client = self.engines[0].client  # images and Harbor tasks: the first engine
        # A remote engine cannot see this machine's directories: copy trees in and out.
        local = all(engine.spec.local for engine in self.engines)
        self.bind_mounts = bind_mounts if bind_mounts is not None else local
        self.uid, self.gid = (os.getuid(), os.getgid()) if os.getuid() else (IMAGE_USER, IMAGE_USER)
        self.owner = owner_token()
        self.run_id = run_label()
        slots = {e.spec.name: e.slots for e in self.engines if e.slots is not None}
        self.placing = Placement(self.run_id, slots) if hosts else None
        self.live: dict[str, Any] = {}
        self.program_mounts: dict[str, str] = {}  # host install dir -> where the agent sees it
        if image is not None:
            self.require_image(image, "--docker-image")
        self.reaped = [name for e in self.engines for name in reap_dead_owners(e.client)]
        atexit.register(self.remove_all)

    def run_directory(self, directory: Path) -> None:
        """The pool's placement is shared through the run directory by all of a run's
        processes."""
        if self.placing is not None:
            self.placing.share_in(directory)

    def require_image(self, image: str, origin: str) -> None:
        import docker.errors

        for engine in self.engines:
            try:
                engine.client.images.get(image)
            except docker.errors.ImageNotFound:
                on = (
                    f"the Docker engine {engine.spec.name}" if self.placing else "the Docker engine"
                )
                raise pytest.UsageError(
                    f"{origin} {image}: no such image on {on}; `docker pull {image}` or build "
                    f"it there, or `docker save {image} | docker -H URL load` it from another "
                    "engine (docs/sandboxes.md shows how to put an agent CLI in an image)"
                ) from None

    def place(self, trial_id: str) -> tuple[Engine, str | None]:
        """The engine a trial's container goes to, and the placement key it holds a slot by
        (None: one engine, no placement)."""
        if self.placing is None:
            return self.engines[0], None
        name = self.placing.acquire(trial_id)
        return next(e for e in self.engines if e.spec.name == name), trial_id

    def release(self, key: str) -> None:
        if self.placing is not None:
            self.placing.release(key)

    def lost(self, engine: Engine) -> Any:
        """What engine_errors tells of an engine failure of a trial on engine: counted in the
        placement, and the engine marked down once it no longer answers a ping."""

        def heard(answered: bool) -> None:
            if self.placing is None:
                return
            down = None if answered else engine_silent(engine)
            self.placing.failed(engine.spec.name, down)

        return heard

    def program_path(self, program: str) -> str:
        """Mount a host-installed program's install dir read-only into every container.

        A bare name is the image's own program, found on the image's PATH. A host program
        must be a native binary: the image need not have the interpreter a script names
        (node for an npm launcher), nor the host's libraries beyond libc.
        """
        if "/" not in program:
            return program
        real = Path(program).resolve()
        if not self.bind_mounts:
            raise pytest.UsageError(
                f"--sandbox=docker: {program} is on this machine, which a remote Docker engine "
                "cannot mount; install the CLI in the image and pass --agent-opt bin=NAME"
            )
        try:
            with real.open("rb") as handle:
                magic = handle.read(4)
        except OSError as exc:
            raise pytest.UsageError(f"--sandbox=docker: cannot read {program}: {exc}") from None
        if magic != b"\x7fELF":
            raise pytest.UsageError(
                f"--sandbox=docker: {program} ({real}) is a script, whose interpreter the image "
                "may lack; pass --agent-opt bin=PATH of the CLI's native binary, or install the "
                "CLI in the image and pass --agent-opt bin=NAME (docs/sandboxes.md)"
            )
        root = install_root(real, self.program_hidden())
        inner = self.program_mounts.setdefault(
            str(root), f"{PROGRAMS_DIR}/{len(self.program_mounts)}"
        )
        return inner if root == real else f"{inner}/{real.relative_to(root)}"

    def expose(self, paths: Sequence[Path], origin: str) -> None:
        """Host paths are bind-mounted read-only at their own path into every container; a
        remote engine cannot see them."""
        super().expose(paths, origin)
        if self.exposed and not self.bind_mounts:
            raise pytest.UsageError(
                f"{origin}: {self.exposed[0]} is on this machine, which a remote Docker engine "
                "cannot mount; put it in the image (docs/sandboxes.md)"
            )

    def give_to_agent(self, directory: Path) -> None:
        """Make a bind-mounted tree the agent's: as root on the host, files belong to root,
        and the agent runs unprivileged."""
        if os.getuid() == 0:
            inside = directory.rglob("*") if directory.is_dir() else ()
            for path in (directory, *inside):
                os.lchown(path, self.uid, self.gid)

    def tar(self, dirs: Mapping[str, Path]) -> bytes:
        return _tar_dirs(dirs, self.uid, self.gid)

    def create(self, task: Task, trial_id: str) -> Sandbox:
        """A container of the run's (or the task's `image`) image; a task that brings its own
        image (Harbor) needs TaskImageProvider (sandbox/task_image.py)."""
        if task.container is not None:
            raise ValueError(f"task {task.id} brings its own image: TaskImageProvider runs it")
        image = task.image or self.image
        if image is None:
            raise pytest.UsageError(
                f"task {task.id}: --sandbox=docker needs an image: pass --docker-image IMAGE "
                "or set `image` in the task"
            )
        if task.image is not None:
            self.require_image(image, f"task {task.id}: image")
        root = make_trial_root(trial_id)
        workspace, home = root / "workspace", root / "home"
        workspace.mkdir()
        home.mkdir()
        (root / ROUND_SCRIPT_NAME).touch()  # bind-mounted: it must exist before the container
        materialize(task.input_tree, workspace)
        engine, placed = self.place(trial_id)
        try:
            with engine_errors("creating the trial's container", self.lost(engine)):
                container = self.create_container(image, trial_id, root, engine=engine)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            if placed is not None:
                self.release(placed)
            raise
        return DockerSandbox(self, root, container, engine=engine, placed=placed)

    def create_container(
        self,
        image: str,
        trial_id: str,
        root: Path,
        inner_workspace: str = INNER_WORKSPACE,
        limits: SandboxLimits | None = None,
        engine: Engine | None = None,
    ) -> Any:
        """A trial's container (not started) on engine (the first) with root's workspace/ at
        inner_workspace, home/ and the round script; limits: the run's unless given."""
        limits = limits or self.limits
        client = (engine or self.engines[0]).client
        workspace, home = root / "workspace", root / "home"
        volumes, masks = self.shared_mounts()
        if self.bind_mounts:
            self.give_to_agent(workspace)
            self.give_to_agent(home)
            volumes[str(workspace)] = {"bind": inner_workspace, "mode": "rw"}
            volumes[str(home)] = {"bind": INNER_HOME, "mode": "rw"}
            volumes[str(home.parent / ROUND_SCRIPT_NAME)] = {"bind": ROUND_SCRIPT, "mode": "ro"}
        api = client.api
        host_config = trial_host_config(
            api,
            limits,
            volumes,
            cap_drop=["ALL"],
            tmpfs=masks,
        )
        created = api.create_container(
            image,
            ["/bin/sh", ROUND_SCRIPT],
            user=f"{self.uid}:{self.gid}",
            working_dir=inner_workspace,
            labels={LABEL_OWNER: self.owner, LABEL_RUN: self.run_id, LABEL_TRIAL: trial_id},
            # Binds alone (no declared volumes): a snapshot of the container (a Harbor task's
            # verifier runs on one) then holds no volume that would hide its files.
            host_config=host_config,
        )
        container = self.track(created, client)
        if not self.bind_mounts:
            try:
                container.put_archive("/", self.tar({inner_workspace: workspace, INNER_HOME: home}))
            except BaseException:
                self.remove(container)
                raise
        return container

    def shared_mounts(self) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
        """What every trial container mounts: the host-installed CLIs and exposed paths
        read-only (binds), and an empty read-only tmpfs over task data an exposure holds."""
        volumes = {
            host: {"bind": inner, "mode": "ro"} for host, inner in self.program_mounts.items()
        }
        volumes.update({str(p): {"bind": str(p), "mode": "ro"} for p in self.exposed})
        masks = [p for p in self.masked if any(within(p, root) for root in self.exposed)]
        return volumes, {str(path): "ro,size=4k" for path in masks}

    def track(self, created: Mapping[str, Any], client: Any = None) -> Any:
        """A handle on a container just created on client's engine (the first) (by id: the
        SDK's containers.create would inspect it, one more engine round trip for attributes
        nothing here reads), removed at the latest when this process exits."""
        client = client or self.client
        container = client.containers.prepare_model({"Id": created["Id"]})
        self.live[container.id] = container
        return container

    def remove(self, container: Any) -> None:
        """Remove a container; one already gone is fine, and so is an engine that no longer
        answers (what it held is gone with it, or `agentbench clean` reaps it)."""
        import docker.errors
        import requests

        self.live.pop(container.id, None)
        with contextlib.suppress(
            docker.errors.NotFound,
            requests.exceptions.ConnectionError,
            requests.exceptions.Timeout,
        ):
            container.remove(force=True)

    def kill(self, container: Any) -> None:
        """Stop a container now; one that is not running is fine."""
        import docker.errors
        import requests

        with contextlib.suppress(docker.errors.APIError, requests.exceptions.ConnectionError):
            container.kill()

    def remove_all(self) -> None:
        """Last resort at interpreter exit (Ctrl-C past the fixtures): no container survives."""
        for container in list(self.live.values()):
            with contextlib.suppress(Exception):
                self.remove(container)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "image": self.image,
            "network": self.limits.network,
            "cpus": self.limits.cpus,
            "memory_limit": self.limits.memory,
            "pids_limit": self.limits.pids,
            "transfer": "bind" if self.bind_mounts else "copy",
            "user": f"{self.uid}:{self.gid}",
            "engine": self.client.version().get("Version"),
            **({"engines": self.pool()} if self.placing is not None else {}),
        }

    def pool(self) -> list[dict[str, Any]]:
        """The pool's engines, for the run header and report: name, slots, engine version."""
        return [{"name": e.spec.name, "slots": e.slots, "version": e.version} for e in self.engines]
