"""State one process keeps for all its trials holds when trials run at once, in threads.

Every test starts its threads together at a barrier and uses the real thing: the meter's
proxy process, owner directories on disk, the file helper, a CLI binary; only the Docker
engine is a stand-in that counts its builds.
"""

from __future__ import annotations

import io
import tarfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import docker.errors
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.agents.claude import ClaudeAgent
from pytest_agentbench.fs.filework import wait_for_file_work, write_later
from pytest_agentbench.meter.client import shared_meter, stop_shared_meter
from pytest_agentbench.sandbox import ownership
from pytest_agentbench.sandbox.base import memory_dir
from pytest_agentbench.sandbox.bwrap import BwrapProvider
from pytest_agentbench.sandbox.engines import Engine, EngineSpec
from pytest_agentbench.sandbox.ownership import OWNER_PREFIX, owned_dir
from pytest_agentbench.sandbox.task_image import built_image
from pytest_agentbench.settings import SandboxLimits, Settings
from pytest_agentbench.tasks.model import ContainerSpec, TaskError
from pytest_agentbench.trial.keep import KEPT_DIR, WorkspaceKeeper

THREADS = 8
T = TypeVar("T")


def at_once(count: int, work: Callable[[int], T]) -> list[T]:
    """work(0) ... work(count - 1), each in its own thread, all released together."""
    start = threading.Barrier(count, timeout=30)

    def run(index: int) -> T:
        start.wait()
        return work(index)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


def test_trials_starting_together_share_one_meter_proxy() -> None:
    stop_shared_meter()  # a proxy an earlier test of this process left is not the one
    try:
        meters = at_once(THREADS, lambda _: shared_meter(None))
        assert all(meter is meters[0] for meter in meters)
        tokens = {meters[0].open_trial("http://127.0.0.1:9")[0] for _ in range(3)}
        assert len(tokens) == 3  # each trial still gets its own route
    finally:
        stop_shared_meter()


@settings(max_examples=15, deadline=None)
@given(asks=st.lists(st.integers(0, 2), min_size=2, max_size=THREADS))
def test_trials_asking_at_once_get_one_owner_directory_per_root_and_one_sweep(
    asks: list[int], tmp_path_factory: pytest.TempPathFactory
) -> None:
    roots = [tmp_path_factory.mktemp("root") for _ in range(3)]
    directories = ownership._OwnerDirectories()
    sweeps = []
    original = ownership.left_behind

    def counted(found_in: list[str]) -> list[ownership.OwnedDirectory]:
        sweeps.append(found_in)
        time.sleep(0.01)  # a wide window for a second sweep to start in
        return original(found_in)

    ownership.left_behind = counted
    try:
        got = at_once(len(asks), lambda i: directories.get(str(roots[asks[i]])))
    finally:
        ownership.left_behind = original
        directories.remove_all()
        wait_for_file_work()
    assert len(sweeps) == 1
    for index, root in enumerate(roots):
        mine = {path for path, ask in zip(got, asks, strict=True) if ask == index}
        assert len(mine) == (1 if index in asks else 0)
        assert all(path.parent == root and path.name.startswith(OWNER_PREFIX) for path in mine)


class _Engine:
    """A stand-in Docker engine: a build takes a moment and is counted; its images have an
    /app working directory holding one file."""

    def __init__(self, fails: bool = False, together: threading.Barrier | None = None) -> None:
        self.fails = fails
        self.together = together  # builds that must be under way at the same time
        self.builds: list[str] = []
        self.copies = 0  # containers made to copy an image's working directory out
        self.tags: set[str] = set()
        self.images = self
        self.api = self

    def engine(self, name: str = "unix:///fake.sock") -> Engine:
        """This stand-in as an engine of a run, under a name of its own."""
        return Engine(EngineSpec(name, name, name), self, None)

    def get(self, tag: str) -> Any:
        if tag not in self.tags:
            raise docker.errors.ImageNotFound(tag)
        return type("Image", (), {"attrs": {"Config": {"WorkingDir": "/app"}}})()

    def build(self, *, tag: str, **_: Any) -> None:
        self.builds.append(tag)
        if self.together is not None:
            self.together.wait()
        time.sleep(0.05)
        if self.fails:
            raise docker.errors.BuildError("step 1 failed", [{"error": "no base image"}])
        self.tags.add(tag)

    def create_container(self, tag: str, *_: Any, **__: Any) -> dict[str, str]:
        self.copies += 1
        return {"Id": tag}

    def get_archive(self, container: str, path: str) -> tuple[list[bytes], dict[str, Any]]:
        if path != "/app":
            raise docker.errors.NotFound(path)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            top = tarfile.TarInfo("app")
            top.type, top.mode = tarfile.DIRTYPE, 0o755
            archive.addfile(top)
            data = b"hello\n"
            info = tarfile.TarInfo("app/hello.txt")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        return [buffer.getvalue()], {}

    def remove_container(self, container: str, **_: Any) -> None:
        pass


def _spec(tmp_path: Path) -> ContainerSpec:
    """A task environment of its own content (the process-wide cache never saw it)."""
    context = tmp_path / uuid.uuid4().hex / "environment"
    context.mkdir(parents=True)
    (context / "Dockerfile").write_text("FROM scratch\nWORKDIR /app\n")
    return ContainerSpec(context, uuid.uuid4().hex, tmp_path / "tests", "/tests/test.sh")


def test_trials_of_one_task_image_wait_for_its_one_build(tmp_path: Path) -> None:
    engine, spec = _Engine(), _spec(tmp_path)
    images = at_once(THREADS, lambda _: built_image(spec, engine.engine()))
    assert len(engine.builds) == 1
    assert all(image is images[0] for image in images)
    assert images[0].tree.paths() == ["hello.txt"]


def test_a_failed_build_is_tried_once_and_fails_every_trial_alike(tmp_path: Path) -> None:
    engine, spec = _Engine(fails=True), _spec(tmp_path)

    def build(_: int) -> str:
        with pytest.raises(TaskError, match="does not build") as raised:
            built_image(spec, engine.engine())
        return str(raised.value)

    assert len(set(at_once(THREADS, build))) == 1
    assert len(engine.builds) == 1


def test_images_of_different_content_build_at_the_same_time(tmp_path: Path) -> None:
    """Each build waits at a barrier for the other: one lock for all contents would hang."""
    engine = _Engine(together=threading.Barrier(2, timeout=10))
    specs = [_spec(tmp_path), _spec(tmp_path)]
    at_once(2, lambda i: built_image(specs[i], engine.engine()))
    assert len(set(engine.builds)) == 2


def test_each_engine_of_a_pool_builds_the_image_once_and_this_machine_copies_it_once(
    tmp_path: Path,
) -> None:
    """Trials of one task on two engines at once: one build on each (an engine never runs an
    image it does not hold), one host copy of the working directory between them."""
    first, second, spec = _Engine(), _Engine(), _spec(tmp_path)
    pool = [first.engine("unix:///one.sock"), second.engine("tcp://127.0.0.1:2376")]
    images = at_once(THREADS, lambda i: built_image(spec, pool[i % 2]))
    assert len(first.builds) == len(second.builds) == 1
    assert first.copies + second.copies == 1
    assert {image.tree_root for image in images} == {images[0].tree_root}


def counting_claude(tmp_path: Path, then: str) -> tuple[ClaudeAgent, Path]:
    """A Claude agent whose binary notes each call in the returned file, then runs then."""
    asked = tmp_path / "asked"
    cli = tmp_path / "claude"
    cli.write_text(f"#!/bin/sh\necho x >> {asked}\n{then}\n")
    cli.chmod(0o755)
    return ClaudeAgent(Settings(agent="claude", agent_opts={"bin": str(cli)})), asked


def test_a_cli_version_is_asked_once_for_trials_asking_together(tmp_path: Path) -> None:
    agent, asked = counting_claude(tmp_path, 'sleep 0.05\necho "9.9.9 (Claude Code)"')
    versions = at_once(THREADS, lambda _: agent.cli_version())
    assert versions == ["9.9.9 (Claude Code)"] * THREADS
    assert asked.read_text() == "x\n"


def test_a_cli_without_a_version_is_asked_once_too(tmp_path: Path) -> None:
    agent, asked = counting_claude(tmp_path, "exit 3")
    assert at_once(THREADS, lambda _: agent.cli_version()) == [None] * THREADS
    assert agent.cli_version() is None
    assert asked.read_text() == "x\n"


def test_the_first_bwrap_trials_stage_one_etc(tmp_path: Path) -> None:
    provider = BwrapProvider(SandboxLimits(), None)
    where = owned_dir(memory_dir())
    before = set(where.glob("agentbench-etc-*"))
    binds = at_once(THREADS, lambda _: provider.runtime_binds)
    assert all(b is binds[0] for b in binds)
    assert len(set(where.glob("agentbench-etc-*")) - before) == 1


def test_each_trials_wait_covers_its_own_writes_while_others_write(tmp_path: Path) -> None:
    def trial(index: int) -> list[str]:
        artifacts = tmp_path / f"trial-{index}"
        for round_index in range(20):
            write_later(artifacts / f"round-{round_index}.txt", f"{index}:{round_index}".encode())
        failures = wait_for_file_work()
        assert [(artifacts / f"round-{r}.txt").read_bytes() for r in range(20)] == [
            f"{index}:{r}".encode() for r in range(20)
        ]
        return failures

    assert at_once(THREADS, trial) == [[]] * THREADS


def test_workspaces_kept_from_several_trials_at_once_are_each_complete(tmp_path: Path) -> None:
    keeper = WorkspaceKeeper("all", tmp_path / "run")

    def trial(index: int) -> Path:
        workspace = tmp_path / f"workspace-{index}"
        (workspace / "src").mkdir(parents=True)
        for name in ("a.txt", "src/b.txt"):
            (workspace / name).write_text(f"{index} {name}\n")
        keeper.keep(f"task-{index}", 0, workspace, final_exact=True)
        return workspace

    workspaces = at_once(THREADS, trial)
    assert wait_for_file_work() == []
    for index, workspace in enumerate(workspaces):
        kept = tmp_path / "run" / "trials" / f"task-{index}-r0" / KEPT_DIR
        assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*")) == [
            "a.txt",
            "src",
            "src/b.txt",
        ]
        assert (kept / "src/b.txt").read_text() == (workspace / "src/b.txt").read_text()
