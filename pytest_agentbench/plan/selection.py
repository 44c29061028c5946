"""Node ids given back as arguments select trials: ``tasks/replace-version::r1``, or a
generated task's ``<suite>/<task-id>::r0``; in a run with arms, ``tasks/replace-version::core::r1``
(a plain ``::r1`` then names that repeat of every arm).

pytest refuses ``DIR::NAME`` and paths that do not exist, yet a directory task's trials are
named below its directory and a generated task is named below its suite as if it were a
path. Such an argument becomes a directory pytest collects (its anchor), and the trials it
names are remembered: below the anchor only they are collected, so their node ids are those
of a full run. Tasks outside the rootdir are named relative to their task source, so an id is
also looked up in each source. Every process, xdist workers too, derives the same selection
from the same arguments.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pytest

from pytest_agentbench.plan.arm_trials import run_arms
from pytest_agentbench.plan.collect import instances, suite_tasks
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.arms import Arm
from pytest_agentbench.tasks.directory import find_task_dirs, is_task_dir
from pytest_agentbench.tasks.formats import SWEBENCH
from pytest_agentbench.tasks.sources import (
    is_suite_dir,
    resolve_formatted_sources,
    resolve_sources,
    suite_name,
)

# A task: (task directory, None) or (suite directory, generated task id).
TaskKey = tuple[Path, str | None]


@dataclass
class TrialSelection:
    """What node-id arguments ask for; other arguments keep everything below them."""

    anchors: set[Path] = field(default_factory=set)
    plain: list[Path] = field(default_factory=list)
    wanted: dict[TaskKey, set[str] | None] = field(default_factory=dict)  # None: every repeat

    def restricts(self, path: Path) -> bool:
        """Whether only the named trials are collected at PATH."""
        return _within(path, self.anchors) and not _within(path, self.plain)

    def prunes(self, path: Path) -> bool:
        """A task or suite directory below an anchor that no argument names."""
        if not self.restricts(path) or any(key[0] == path for key in self.wanted):
            return False
        return is_task_dir(path) or is_suite_dir(path)

    def repeat_names(self, path: Path, task_id: str | None) -> set[str] | None:
        """The repeats to collect of one task (None: those --repeats makes). A named repeat
        is collected beyond --repeats too: it is the trial the id was copied from."""
        return self.wanted.get((path, task_id)) if self.restricts(path) else None

    def suite_task_ids(self, suite: Path) -> set[str] | None:
        """The generated tasks to collect of one suite (None: all of them)."""
        if not self.restricts(suite) or (suite, None) in self.wanted:
            return None
        return {task_id for path, task_id in self.wanted if path == suite and task_id}

    def add(self, anchor: Path, key: TaskKey, repeat: str | None) -> None:
        self.anchors.add(anchor)
        if repeat is None or (key in self.wanted and self.wanted[key] is None):
            self.wanted[key] = None
        else:
            self.wanted.setdefault(key, set()).add(repeat)  # type: ignore[union-attr]


def _within(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _absolute(path: Path) -> Path:
    """Absolute and normalized, symlinks kept: the way pytest names collected paths."""
    return Path(os.path.abspath(path))


def widen_last_failed(config: pytest.Config, settings: Settings) -> None:
    """--lf: pytest keeps the files of failed trials found below the rootdir and skips every
    other file, yet a directory task of a source outside the rootdir is named relative to its
    source; its directory is added to those pytest keeps (pytest's own lfplugin)."""
    lfplugin = config.pluginmanager.get_plugin("lfplugin")
    kept = getattr(lfplugin, "_last_failed_paths", None)
    if lfplugin is None or kept is None:
        return
    finder = _Finder(config, settings)
    for nodeid in lfplugin.lastfailed:
        strpath = nodeid.split("::")[0]
        if (config.rootpath / strpath).exists():
            continue
        for source in finder.instance_sources:  # <file stem>/<instance_id>, wherever it is
            if strpath.startswith(f"{source.stem}/"):
                kept.update((source, *source.parents))
        for source in finder.sources:
            path = _absolute(source / strpath)
            if is_task_dir(path):
                kept.update((path, *path.parents))


REPEAT_NAME = re.compile(r"r(0|[1-9][0-9]*)")


class _Finder:
    """Looks a node id's path part up: below the invocation directory, else in each source."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.base = Path(config.invocation_params.dir)

    @cached_property
    def sources(self) -> list[Path]:
        return resolve_sources(self.settings.tasks, self.base)

    @cached_property
    def instance_sources(self) -> list[Path]:
        """The swebench:FILE sources, whose tasks are named <file stem>/<instance_id>."""
        if not self.settings.tasks:
            return []
        sources = resolve_formatted_sources(self.settings.tasks, self.base)
        return [path for forced, path in sources if forced == SWEBENCH]

    def task_ids(self, source: Path) -> list[str]:
        """The task ids of a generated suite or of an instances file."""
        if source.is_file():
            return [loaded.task_id for loaded in instances(self.config, source)]
        return [task.id for task in suite_tasks(self.config, source)]

    def has_task(self, suite: Path, task_id: str) -> bool:
        return task_id in self.task_ids(suite)

    def task_paths(self, strpath: str) -> list[str]:
        """The directory tasks a mistyped path part may have meant, named as node ids name
        them: those of the sources and of the nearest directory of strpath that exists."""
        given = _absolute(self.base / strpath)
        near = next((p for p in given.parents if p.exists()), self.base)
        roots = [near] if near != self.base and _within(near, [self.base]) else []
        named = []
        for source in [*roots, *self.sources]:
            if is_suite_dir(source):
                continue
            for path in find_task_dirs(source):
                root = self.base if _within(path, [self.base]) else source
                named.append(path.relative_to(root).as_posix())
        return named

    def locate(self, strpath: str) -> tuple[Path, TaskKey] | None:
        """The anchor and task a path part names, or None when it is pytest's to resolve."""
        given = _absolute(self.base / strpath)
        if given.exists():
            return (given, (given, None)) if is_task_dir(given) else None
        stem, _, instance_id = Path(strpath).as_posix().partition("/")
        for source in self.instance_sources:
            if instance_id and source.stem == stem:
                return source, (source, instance_id)
        suite = next((p for p in given.parents if p.exists()), None)
        if suite is not None and is_suite_dir(suite):  # <suite>/<task-id>, any task id:
            return suite, (suite, given.relative_to(suite).as_posix())  # a missing one is named
        for source in self.sources:
            path = _absolute(source / strpath)
            if path.is_dir() and is_task_dir(path):
                return source, (path, None)
            task_id = Path(strpath).as_posix()
            if is_suite_dir(source) and self.has_task(source, task_id):
                return source, (source, task_id)
        return None


def closest(name: str, known: list[str]) -> str:
    """The valid ids nearest a mistyped one, as a hint; empty when none is near."""
    near = difflib.get_close_matches(name, sorted(set(known)), n=3)
    return f" (closest: {', '.join(near)})" if near else ""


def _trial_name(arg: str, parts: list[str], arms: tuple[Arm, ...] | None) -> str | None:
    """The trial a node id names below its task (r<k>, or <arm>::r<k> in a run with arms;
    None: all of the task's); a usage error when it names none."""
    if not parts:
        return None
    *arm, repeat = parts
    known = {a.name for a in arms} if arms is not None else set()
    if len(arm) > 1 or not REPEAT_NAME.fullmatch(repeat) or (arm and arm[0] not in known):
        shape = "r0, r1, ... (one per repeat)"
        if arms is not None:
            shape = f"<arm>::r<k> with <arm> one of {', '.join(sorted(known))}"
        raise pytest.UsageError(f"{arg}: no such trial; a task's trials are named {shape}")
    return "::".join(parts)


def select_trials(config: pytest.Config, settings: Settings) -> tuple[list[str], TrialSelection]:
    """The arguments pytest is given instead of config.args, and the trials named among them."""
    finder = _Finder(config, settings)
    selection = TrialSelection()
    rewritten: list[str] = []
    for arg in config.args:
        strpath, *parts = arg.split("::")
        located = None if "[" in arg else finder.locate(strpath)
        if located is None:
            plain = _absolute(finder.base / arg.partition("[")[0].split("::")[0])
            if not plain.exists():  # pytest's words, before xdist workers would each say them
                near = closest(strpath, finder.task_paths(strpath)) if parts else ""
                raise pytest.UsageError(f"file or directory not found: {arg}{near}")
            rewritten.append(arg)
            selection.plain.append(plain)
            continue
        anchor, (path, task_id) = located
        trial = _trial_name(arg, parts, run_arms(config))
        if task_id is not None and not finder.has_task(path, task_id):
            known = finder.task_ids(path)
            what = (
                f"the file {path}" if path.is_file() else f"the suite {suite_name(path)!r} ({path})"
            )
            raise pytest.UsageError(
                f"{arg}: {what} has no task {task_id!r}" + closest(task_id, known)
            )
        selection.add(anchor, (path, task_id), trial)
        if str(anchor) not in rewritten:
            rewritten.append(str(anchor))
    return rewritten, selection
