"""The Task: what an agent is asked to do, its input tree and how the result is judged."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from pytest_agentbench.tasks import files
from pytest_agentbench.tasks.hashing import fixture_hash


class TaskError(Exception):
    """A task that cannot be loaded or run; the message names the file, the problem and the fix."""


class Tree(Protocol):
    """A file tree: relative POSIX paths of regular files, plus directories nobody fills."""

    def paths(self) -> list[str]:
        """Relative paths of every regular file, sorted."""
        ...

    def empty_dirs(self) -> frozenset[str]:
        """Directories that exist without any file beneath them."""
        ...

    def directories(self) -> list[str]:
        """Every directory of the tree, parents before children."""
        ...

    def read(self, path: str) -> bytes:
        """The bytes of one file."""
        ...

    def size(self, path: str) -> int:
        """The size of one file in bytes."""
        ...

    def open_source(self, path: str) -> str | None:
        """A host path to copy the file from, when there is one (faster than read())."""
        ...


def materialize(tree: Tree, dest: Path) -> None:
    """Write the tree's files and directories under dest (which must exist)."""
    root = str(dest)
    files.make_dirs(root, tree.directories())
    for rel in tree.paths():
        _write_tree_file(tree, rel, root)


def _write_tree_file(tree: Tree, rel: str, root: str) -> None:
    source = tree.open_source(rel)
    if source is not None:
        files.copy_file(source, f"{root}/{rel}")
    else:
        files.write_file(f"{root}/{rel}", tree.read(rel))


def as_mapping(tree: Tree) -> dict[str, bytes]:
    """The whole tree in memory; used for hashing and small trees only."""
    return {rel: tree.read(rel) for rel in tree.paths()}


@dataclass(frozen=True)
class MemoryTree:
    """A tree held in memory, as generated tasks build them."""

    files: Mapping[str, bytes]
    dirs: frozenset[str] = frozenset()

    def paths(self) -> list[str]:
        return sorted(self.files)

    def empty_dirs(self) -> frozenset[str]:
        return self.dirs

    def directories(self) -> list[str]:
        return sorted(tree_dirs(self))

    def read(self, path: str) -> bytes:
        return self.files[path]

    def size(self, path: str) -> int:
        return len(self.files[path])

    def open_source(self, path: str) -> str | None:
        return None


@dataclass(frozen=True)
class DirTree:
    """A tree on disk (a directory task's workspace/, expected/ or solution/)."""

    root: Path
    # Entries left out of the tree (another format's caches, its skipped symlinks); None: none.
    skip: Callable[[os.DirEntry[str]], bool] | None = None

    @cached_property
    def _listing(self) -> tuple[list[str], frozenset[str]]:
        """(sorted file paths, empty directories), walked once without following symlinks."""
        files: list[str] = []
        empty: set[str] = set()
        stack = [(str(self.root), "")]
        skip = self.skip
        while stack:
            directory, prefix = stack.pop()
            with os.scandir(directory) as entries:
                children = [entry for entry in entries if skip is None or not skip(entry)]
            if not children and prefix:  # holding only what is left out, it is empty here
                empty.add(prefix[:-1])
            for entry in children:
                rel = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, rel + "/"))
                elif entry.is_file(follow_symlinks=False):
                    files.append(rel)
                else:
                    kind = "symlink" if entry.is_symlink() else "special file"
                    raise TaskError(
                        f"{self.root / rel}: is a {kind}; task trees may hold only regular "
                        "files and directories (replace it with a regular file)"
                    )
        return sorted(files), frozenset(empty)

    def paths(self) -> list[str]:
        return self._listing[0]

    def empty_dirs(self) -> frozenset[str]:
        return self._listing[1]

    def read(self, path: str) -> bytes:
        return files.read_file(self._prefix + path)

    def size(self, path: str) -> int:
        return os.stat(self._prefix + path).st_size

    def open_source(self, path: str) -> str | None:
        return self._prefix + path

    def directories(self) -> list[str]:
        return self._directories

    @cached_property
    def _directories(self) -> list[str]:
        return sorted(tree_dirs(self))

    @cached_property
    def _prefix(self) -> str:
        return f"{self.root}{os.sep}"  # joined as strings: graders call this once per file


@dataclass(frozen=True)
class ContainerSpec:
    """A task whose environment is an image built from its own Dockerfile and whose verifier
    runs inside a container (Harbor): the workspace is the image's working directory, and the
    trial is exact when the verifier's reward is 1."""

    context: Path  # the build context: the task's environment/ directory
    context_hash: str  # of environment/: the image is built once per content
    tests: Path  # copied to /tests once the agent's processes are gone
    test_script: str  # run with bash from the working directory, e.g. /tests/test.sh
    verifier_env: Mapping[str, str] = field(default_factory=dict)
    solution: Path | None = None  # copied to /solution for the oracle only
    solve_script: str = "/solution/solve.sh"
    solution_env: Mapping[str, str] = field(default_factory=dict)
    image: str | None = None  # a prebuilt image instead of the Dockerfile
    build_timeout: float = 600.0
    cpus: float | None = None
    memory_bytes: int | None = None
    network: bool = True  # False: the task's containers have no network
    content_hash: str = ""  # of the whole task directory: its fixture hash
    agent_user: str = ""  # who runs the agent and solve.sh ("": the image's USER)
    verifier_user: str = ""  # who runs the tests ("": the image's USER)
    workdir: str = ""  # the workspace in the image ("": its WORKDIR)
    origin: str = ""  # where the task was given, for messages ("": its task.toml)
    # A SWE-bench instance's official fields (tasks/swebench.py), graded by the swebench package
    instance: Mapping[str, Any] | None = None


class LazyText:
    """A dataclass field holding a str, or a zero-argument callable that makes it on first read.

    Generated suites pass a callable so collecting hundreds of tasks builds no prompt;
    readers always get a str from ``task.prompt``.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}_value"

    def __get__(self, obj: object, objtype: type | None = None) -> str:
        if obj is None:
            raise AttributeError("no default")  # tells dataclasses the field is required
        value = obj.__dict__[self._slot]
        if callable(value):
            value = value()
            obj.__dict__[self._slot] = value
        return str(value)

    def __set__(self, obj: object, value: str | Callable[[], str]) -> None:
        obj.__dict__[self._slot] = value


_IMAGE_READERS: list[Callable[[ContainerSpec], Tree]] = []


def read_image_trees_with(reader: Callable[[ContainerSpec], Tree]) -> None:
    """Installed by the sandbox that builds task images (sandbox/task_image.py): tasks sit
    below sandboxes, so a container task's input tree is read through the reader it gives."""
    _IMAGE_READERS[:] = [reader]


def image_tree(spec: ContainerSpec) -> Tree:
    """A container task's input: its image's working directory, read by the docker sandbox."""
    if not _IMAGE_READERS:
        raise TaskError(
            f"{spec.context.parent}: the task's workspace is its image's working directory, "
            "which only the docker sandbox reads; run it with --sandbox=docker"
        )
    return _IMAGE_READERS[0](spec)


@dataclass(frozen=True)
class Task:
    """One benchmark task. Trees (and a generated prompt) are built lazily so large
    generated suites stay cheap to collect."""

    id: str
    source: str
    make_input: Callable[[], Tree]
    prompt: LazyText = LazyText()  # required: a str or a callable making it
    make_expected: Callable[[], Tree] | None = None
    verifier: Path | None = None
    # How another format runs its verifier: the program before the script (python, bash -e),
    # variables added to the environment, and its own time limit; by default the script is
    # executed directly, environment inherited, limited to max(30 s, the task's timeout).
    verifier_command: tuple[str, ...] = ()
    verifier_env: Mapping[str, str] = field(default_factory=dict)
    verify_timeout: float | None = None
    # The task directory's files (path -> bytes) when the verifier may read beyond its own
    # script (mutants/, the pristine workspace): hashed with the task, never shown to the agent.
    make_task_files: Callable[[], Mapping[str, bytes]] | None = None
    make_solution: Callable[[], Tree] | None = None
    timeout: float = 300.0
    category: str = ""  # the task's class (atomic-bugfix, refactor, completion-integrity, ...)
    tags: tuple[str, ...] = ()
    description: str = ""
    image: str | None = None
    meta: Mapping[str, str] = field(default_factory=dict)
    known_fixture_hash: str | None = None
    # No reachable solution: the verifier passes on the pristine workspace and fails when the
    # agent tampered; the trial is scored on the agent's honesty, not on accuracy.
    no_solution: bool = False
    seed_correct: str | None = None  # a correct answer's text, for anchor arms
    seed_wrong: str | None = None  # a plausible wrong answer's text, for anchor arms
    # name -> tree laid over the pristine workspace that the grader must reject (cheats/<name>/)
    make_cheats: Callable[[], Mapping[str, Tree]] | None = None
    # Set for a task run in its own image and graded inside a container (Harbor)
    container: ContainerSpec | None = None
    # The command that runs the task's own tests in its workspace (python -m pytest tests):
    # the trajectory counts the agent's runs of it; None: the task names none.
    test_command: str | None = None
    # Globs of workspace paths the agent may read but must not write (tests/**): the
    # transcript checks name every write to one, even a write later undone.
    protected: tuple[str, ...] = ()
    # Globs of the workspace paths that are tests, for the code measures' split of lines
    # (grading/measures.py); None: the measures' default patterns.
    test_paths: tuple[str, ...] | None = None
    # False: the verifier alone decides, as rerun-bench and Harbor score their tasks; the agent's
    # exit status and timeout are recorded, not scored. True: the agent must also exit cleanly.
    exit_scored: bool = True
    # Legs of one agent session a trial runs in (tasks/segments.py); None: the run's.
    segments: int | None = None

    def round_exact(self, grade_exact: bool, clean: bool) -> bool:
        """Whether a graded round passes: its grade, and a clean exit where that is scored."""
        return grade_exact and (clean or not self.exit_scored)

    @property
    def input_tree(self) -> Tree:
        return self.make_input()

    @property
    def max_steps(self) -> int | None:
        """The task's step limit (Reasonix's max_steps), for agents that take one; None: none."""
        value = self.meta.get("max_steps")
        return int(value) if value is not None else None

    @property
    def expected_tree(self) -> Tree | None:
        return self.make_expected() if self.make_expected else None

    @property
    def solution_tree(self) -> Tree | None:
        return self.make_solution() if self.make_solution else None

    @property
    def cheat_trees(self) -> Mapping[str, Tree]:
        """Tampered results, each laid over the pristine workspace, that must fail grading."""
        return self.make_cheats() if self.make_cheats else {}

    @property
    def grader_kind(self) -> str:
        return "exact" if self.make_expected is not None else "verify"

    @cached_property
    def fixture_hash(self) -> str:
        """The recorded hash when the source supplies one, else the content hash."""
        if self.known_fixture_hash is not None:
            return self.known_fixture_hash
        return self.content_hash()

    def content_hash(self) -> str:
        """The fixture hash computed from the task's content (builds its trees; a container
        task's input lives in its image, so its directory's content stands for it)."""
        if self.container is not None:
            return self.container.content_hash
        expected = self.expected_tree
        inputs = as_mapping(self.input_tree)
        outputs = as_mapping(expected) if expected is not None else None
        if outputs is not None:  # both trees are in hand: spare unchanged_paths reading them
            self.__dict__.setdefault("unchanged_paths", _same_bytes(inputs, outputs))
        return fixture_hash(
            self.prompt,
            inputs,
            outputs,
            self.verifier.read_bytes() if self.verifier is not None else None,
            self.make_task_files() if self.make_task_files is not None else None,
            self.segments,
        )

    @cached_property
    def unchanged_paths(self) -> frozenset[str]:
        """Files the input and expected trees hold with the same bytes.

        A workspace file found equal to the expected tree at such a path equals the input too,
        so the final diff need not read it again (most tasks change a few files of many).
        """
        expected = self.expected_tree
        if expected is None:
            return frozenset()
        source = self.input_tree
        wanted = set(expected.paths())
        return frozenset(
            rel
            for rel in source.paths()
            if rel in wanted
            and source.size(rel) == expected.size(rel)
            and _same_file(source, expected, rel)
        )

    def apply_reference(self, workspace: Path) -> None:
        """Make the workspace the reference result: the expected tree, or input + solution."""
        expected = self.expected_tree
        if expected is not None:
            replace_with(expected, workspace)
            return
        solution = self.solution_tree
        if solution is None:
            raise TaskError(f"{self.source}: task {self.id!r} has no solution/ to apply")
        materialize(solution, workspace)


def tree_dirs(tree: Tree) -> frozenset[str]:
    """Every directory the tree holds: parents of its files, its empty directories and theirs."""
    dirs: set[str] = set()
    for rel in [*tree.paths(), *(d + "/x" for d in tree.empty_dirs())]:
        parts = rel.split("/")[:-1]
        dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return frozenset(dirs)


def _same_bytes(left: Mapping[str, bytes], right: Mapping[str, bytes]) -> frozenset[str]:
    return frozenset(rel for rel, data in left.items() if right.get(rel) == data)


def _same_file(left: Tree, right: Tree, rel: str) -> bool:
    source = left.open_source(rel)
    return (
        file_matches(right, rel, source)
        if source is not None
        else left.read(rel) == right.read(rel)
    )


def file_matches(tree: Tree, rel: str, path: str) -> bool:
    """Whether the file at path holds exactly the tree's bytes for rel."""
    source = tree.open_source(rel)
    if source is not None:
        return files.same_files(source, path)
    return files.same_as(path, tree.read(rel))


def file_matches_fd(tree: Tree, rel: str, fd: int) -> bool:
    """Whether the open file fd holds exactly the tree's bytes for rel."""
    source = tree.open_source(rel)
    if source is not None:
        return files.same_as_file(fd, source)
    return files.same_as_data(fd, tree.read(rel))


def replace_with(tree: Tree, workspace: Path) -> None:
    """Make workspace hold exactly the tree, changing only what differs, as an editing agent
    would: files already equal and directories the tree also has stay; every other entry is
    removed, and differing files are unlinked and written anew (never written through)."""
    directories = tree.directories()
    kept = _prune(workspace, tree, set(tree.paths()), frozenset(directories), "")
    root = str(workspace)
    files.make_dirs(root, directories)
    for rel in tree.paths():
        if rel not in kept:
            _write_tree_file(tree, rel, root)


def _prune(
    directory: Path, tree: Tree, wanted: set[str], keep_dirs: frozenset[str], prefix: str
) -> set[str]:
    """Remove what the tree does not hold as it is; return the files kept (already equal)."""
    kept: set[str] = set()
    with os.scandir(directory) as entries:
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                if rel in keep_dirs:
                    kept |= _prune(Path(entry.path), tree, wanted, keep_dirs, rel + "/")
                else:
                    shutil.rmtree(entry.path)
            elif (
                rel in wanted
                and entry.is_file(follow_symlinks=False)
                and file_matches(tree, rel, entry.path)
            ):
                kept.add(rel)
            else:
                os.unlink(entry.path)
    return kept
