"""The Docker engines a run's trials go to (--docker-host, repeatable): each named by a URL in
Docker's own transports, or by a Docker context, with its capacity in trials.

    unix:///var/run/docker.sock            a local engine (the workspace is bind-mounted)
    tcp://host:2376?tls=DIR                TLS with DIR/ca.pem, DIR/cert.pem, DIR/key.pem
    ssh://user@host                        through the ssh client, as `docker -H ssh://` does
    NAME                                   a Docker context (`docker context ls`)
    ...#slots=N                            at most N trials at once on that engine

Without slots an engine holds what its reported memory and CPUs allow at the trial limits.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from pytest_agentbench.settings import SandboxLimits

SCHEMES = ("unix", "tcp", "ssh")
TLS_FILES = ("ca.pem", "cert.pem", "key.pem")
PING_TIMEOUT_S = 5.0  # an engine that does not answer a ping in this long is down
CPU_OVERCOMMIT = 4  # trials per CPU at --docker-cpus 1: a trial mostly waits for its model
HINT = (
    "give unix:///PATH, tcp://HOST:PORT?tls=DIR (DIR holding ca.pem, cert.pem, key.pem), "
    "ssh://USER@HOST or a Docker context's name, optionally followed by #slots=N"
)


@dataclass(frozen=True)
class EngineSpec:
    """One --docker-host value: where the engine is, how to reach it, its slots if given."""

    given: str  # as the user wrote it
    name: str  # how reports name it: the URL without its query and fragment, or the context
    base_url: str
    tls: Path | None = None
    slots: int | None = None
    context: str | None = None

    @property
    def local(self) -> bool:
        """Whether the engine sees this machine's files (a unix socket): bind mounts work."""
        return self.base_url.startswith("unix://")


def _usage(given: str, problem: str) -> pytest.UsageError:
    return pytest.UsageError(f"--docker-host {given!r}: {problem}; {HINT}")


def _slots(given: str, fragment: str) -> int | None:
    if not fragment:
        return None
    key, _, value = fragment.partition("=")
    if key != "slots":
        raise _usage(given, f"unknown #{key}")
    if not value.isdigit() or int(value) < 1:
        raise _usage(given, f"#slots={value} is not a whole number of at least 1")
    return int(value)


def parse_engine(given: str, base: Path | None = None) -> EngineSpec:
    """An EngineSpec from a --docker-host value; a relative tls DIR is taken from base (the
    directory the run was started in). A bad value is a usage error naming the fix."""
    text = given.strip()
    location, _, fragment = text.partition("#")
    slots = _slots(given, fragment)
    if "://" not in location:
        if not location or "/" in location or ":" in location:
            raise _usage(given, "not a URL nor a Docker context's name")
        return EngineSpec(given, f"context {location}", "", slots=slots, context=location)
    parts = urlsplit(location)
    if parts.scheme not in SCHEMES:
        raise _usage(given, f"unknown transport {parts.scheme}://")
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = set(query) - {"tls"}
    if unknown:
        raise _usage(given, f"unknown ?{sorted(unknown)[0]}")
    url = f"{parts.scheme}://{parts.netloc}{parts.path}"
    if parts.scheme == "unix":
        if not parts.path or parts.netloc:
            raise _usage(given, "a unix URL names the socket's absolute path (three slashes)")
    elif not parts.hostname:
        raise _usage(given, "no host")
    elif parts.scheme == "tcp" and parts.port is None:
        raise _usage(given, "no port (the engine's TLS port is usually 2376)")
    tls = None
    if "tls" in query:
        if parts.scheme != "tcp":
            raise _usage(given, "?tls= is for tcp:// engines")
        tls = Path(query["tls"]).expanduser()
        tls = tls if tls.is_absolute() else (base or Path.cwd()) / tls
        missing = [name for name in TLS_FILES if not (tls / name).is_file()]
        if missing:
            raise _usage(given, f"{tls} lacks {', '.join(missing)}")
    return EngineSpec(given, url, url, tls=tls, slots=slots)


def connect_engine(spec: EngineSpec, timeout: int = 60) -> Any:
    """A client of the engine (not yet asked anything)."""
    import docker
    from docker.constants import MINIMUM_DOCKER_API_VERSION
    from docker.tls import TLSConfig

    if spec.context is not None:
        from docker.context import ContextAPI

        context = ContextAPI.get_context(spec.context)
        if context is None:
            raise pytest.UsageError(
                f"--docker-host {spec.given!r}: no Docker context of that name (`docker context "
                f"ls` lists them; `docker context create {spec.context} --docker host=URL` makes "
                "one)"
            )
        return docker.DockerClient(
            base_url=context.Host, tls=context.TLSConfig or False, timeout=timeout
        )
    if spec.base_url.startswith("ssh://"):
        if shutil.which("ssh") is None:
            raise pytest.UsageError(
                f"--docker-host {spec.given!r}: an ssh:// engine is reached through the ssh "
                "client, which is not installed here (apt-get install openssh-client)"
            )
        return docker.DockerClient(base_url=spec.base_url, use_ssh_client=True, timeout=timeout)
    tls: Any = False
    base_url = spec.base_url
    if spec.tls is not None:
        tls = TLSConfig(
            client_cert=(str(spec.tls / "cert.pem"), str(spec.tls / "key.pem")),
            ca_cert=str(spec.tls / "ca.pem"),
            verify=True,
        )
        base_url = base_url.replace("tcp://", "https://", 1)
    if spec.tls is None:
        return docker.DockerClient(base_url=base_url, timeout=timeout)
    # REQUESTS_CA_BUNDLE would replace the engine's CA for every request: the environment is
    # left out before the first one (the API version asked afterwards).
    client = docker.DockerClient(
        base_url=base_url, tls=tls, timeout=timeout, version=MINIMUM_DOCKER_API_VERSION
    )
    client.api.trust_env = False
    client.api._version = client.api._retrieve_server_version()
    return client


def unreachable(spec: EngineSpec, error: BaseException) -> pytest.UsageError:
    """The usage error of an engine that does not answer at the start of a run."""
    fix = {
        "unix": "start it (`sudo systemctl start docker`) or check the socket's path",
        "tcp": "check that dockerd listens there (--tlsverify --host tcp://...) and that the "
        "certificates in ?tls= are the ones its CA signed",
        "ssh": "check that `ssh HOST docker version` works without a password prompt",
    }.get(spec.base_url.partition(":")[0], "check it with `docker --context NAME version`")
    return pytest.UsageError(
        f"--docker-host {spec.given!r}: no Docker engine answers ({error}); {fix}, or leave "
        "this engine out of the pool"
    )


def default_slots(info: dict[str, Any], limits: SandboxLimits) -> int:
    """Trials the engine holds at the trial limits: its memory over --docker-memory, and
    CPU_OVERCOMMIT trials per CPU at --docker-cpus 1 (at least one)."""
    memory = int(info.get("MemTotal") or 0) // limits.memory_bytes
    cpus = int(int(info.get("NCPU") or 0) * CPU_OVERCOMMIT / max(limits.cpus, 0.01))
    return max(min(memory, cpus), 1)


def default_engine() -> str:
    """The one engine of a run without --docker-host: DOCKER_HOST, else the local socket."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


@dataclass
class Engine:
    """An engine of the run: how it was given, its client, its slots (None: no bound of its
    own, the one engine of a run without --docker-host) and its version."""

    spec: EngineSpec
    client: Any
    slots: int | None
    version: str | None = None


def pool_engines(
    hosts: Sequence[str], limits: SandboxLimits, base: Path | None = None
) -> list[Engine]:
    """The engines --docker-host names, each answering and with its slots; a value that is
    bad, given twice, or names an engine that does not answer is a usage error."""
    specs = [parse_engine(given, base) for given in hosts]
    names = [spec.name for spec in specs]
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice is not None:
        raise pytest.UsageError(f"--docker-host: {twice} is given twice; give each engine once")
    engines = []
    for spec in specs:
        try:
            client = connect_engine(spec)
            client.ping()
            info = client.info()
            version = client.version().get("Version")
        except pytest.UsageError:
            raise
        except Exception as error:  # refused, TLS, ssh: every way an engine may not answer
            raise unreachable(spec, error) from None
        slots = spec.slots or default_slots(info, limits)
        engines.append(Engine(spec, client, slots, version))
    return engines


def engine_silent(engine: Engine, timeout: float = PING_TIMEOUT_S) -> str | None:
    """Why the engine no longer answers (it is down for the rest of the run), or None when
    it answers a ping within timeout."""
    api = engine.client.api
    try:
        api._result(api._get(api._url("/_ping"), timeout=timeout))
    except Exception as error:
        return f"no answer to a ping ({type(error).__name__})"
    return None
