"""`agentbench clean`: remove the trial directories and containers of runs that were killed
outright."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
from typing import Any

HELP = (
    "remove trial directories and Docker containers left by runs that were killed (SIGKILL, "
    "out of memory); a live run's are kept"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "roots",
        nargs="*",
        metavar="ROOT",
        help="temporary roots to clean (default: the temp dir and /dev/shm)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="list what would be removed, remove nothing"
    )
    parser.add_argument(
        "--docker-host",
        dest="docker_hosts",
        action="append",
        default=None,
        metavar="URL",
        help="an engine of the pool to clean, repeatable, as pytest's --docker-host takes it "
        "(default: the engine DOCKER_HOST names, or the local one)",
    )


def run(args: argparse.Namespace) -> int:
    from pytest_agentbench.fs.filework import remove_later, wait_for_file_work
    from pytest_agentbench.sandbox.ownership import default_roots, owned_directories

    roots = args.roots or default_roots()
    for root in args.roots:
        if not os.path.isdir(root):
            raise ValueError(f"ROOT {root}: not a directory; give a temporary root such as /tmp")
    removed, kept = [], 0
    for root in roots:
        for owned in owned_directories(root):
            if not owned.owner_gone:
                kept += 1
                print(f"kept {owned.path} (its run, {owned.owner}, is alive)")
                continue
            removed.append(owned.path)
            print(f"{'would remove' if args.dry_run else 'removing'} {owned.path} ({owned.owner})")
            if not args.dry_run:
                remove_later(owned.path)
    failures = wait_for_file_work()
    left = [path for path in removed if os.path.lexists(path)] if not args.dry_run else []
    for line in failures:
        print(line)
    for path in left:
        print(f"could not remove {path}")
    verb = "would remove" if args.dry_run else "removed"
    print(
        f"{verb} {len(removed) - len(left)} directories of runs that are gone, "
        f"kept {kept} of live runs, in {', '.join(roots)}"
    )
    containers_left = sum(
        _clean_containers(name, connect, args.dry_run)
        for name, connect in _engines(args.docker_hosts or [])
    )
    return 1 if left or containers_left else 0


def _engines(hosts: list[str]) -> list[tuple[str, Any]]:
    """Each engine to clean, named, with how to connect to it: the pool's, or DOCKER_HOST's."""
    import pytest

    if not hosts:
        import docker

        return [("", functools.partial(docker.from_env, timeout=10))]
    from pytest_agentbench.sandbox.engines import connect_engine, parse_engine

    try:
        specs = [parse_engine(host) for host in hosts]
    except pytest.UsageError as error:
        raise ValueError(str(error)) from None
    return [(spec.name, functools.partial(connect_engine, spec, 10)) for spec in specs]


def _clean_containers(name: str, connect: Any, dry_run: bool) -> int:
    """Remove (or list) the containers and snapshot images of runs that are gone, on one
    engine (name: of the pool; "": the one DOCKER_HOST names, or the local one); how many could
    not be removed. No engine: say so, nothing to do."""
    on = f" on {name}" if name else ""
    try:
        import docker

        client = connect()
        client.ping()
    except Exception as exc:  # no SDK, no engine, no permission: nothing of ours to see
        print(f"containers{on}: not checked (no Docker engine answers: {type(exc).__name__})")
        return 0
    with contextlib.closing(client):
        from pytest_agentbench.sandbox.docker import dead_owner_containers, dead_owner_snapshots

        dead = [
            *(("container", c.name, c.remove) for c in dead_owner_containers(client)),
            *(
                ("snapshot image", i.short_id, functools.partial(client.images.remove, i.id))
                for i in dead_owner_snapshots(client)
            ),
        ]
        failed = 0
        for kind, name, remove in dead:
            print(f"{'would remove' if dry_run else 'removing'} {kind} {name}")
            if dry_run:
                continue
            try:
                remove(force=True)
            except docker.errors.NotFound:
                pass  # gone meanwhile: what we wanted
            except docker.errors.APIError as exc:
                failed += 1
                print(f"could not remove {kind} {name}: {exc.explanation or exc}")
    verb = "would remove" if dry_run else "removed"
    print(f"{verb} {len(dead) - failed} containers and snapshot images of runs that are gone{on}")
    return failed
