"""The pairs a judge is shown (docs/judges.md): for each task, one trial of each side matched
by repeat, and with --gold a reference change against a known-worse one of the same task.

A side is an arm of a run directory, or a whole run directory. A pair needs a scored trial on
each side, both from the same task tree, and the task itself from the run's sources (its
prompt is what the judge reads); a pair missing any of these is left out, with why.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pytest_agentbench.run.measuring import kept_change
from pytest_agentbench.run.store import OBSERVATIONS_FILE, read_observations, read_run_file
from pytest_agentbench.run.trajectories import latest_trials, trial_directory
from pytest_agentbench.settings import Settings
from pytest_agentbench.suites.catalog import iter_catalog
from pytest_agentbench.tasks.model import Task, materialize
from pytest_agentbench.tasks.observation import Observation
from pytest_agentbench.trial.artifacts import CHANGE_FILE, workspace_diff

WHICH = ("either", "both-passed", "both-failed")
REFERENCE, WORSE = "reference", "worse"  # the sides of a gold pair
SEEDED = "seeded"  # a gold pair's worse change when the task has no cheats/


@dataclass(frozen=True)
class Side:
    """One side: the trials of run_dir (of one arm when arm is set), labelled for the tally."""

    label: str
    run_dir: Path
    arm: str | None


@dataclass(frozen=True)
class Change:
    trial: str  # the trial's folder under trials/, or gold's reference / the worse change
    diff: str
    passed: bool | None  # None: not verified (gold changes)


@dataclass(frozen=True)
class Pair:
    """Two changes to one task; kind is trial or gold (gold: sides reference, worse)."""

    kind: str
    task: str
    repeat: int | None
    prompt: str
    sides: tuple[str, str]
    changes: tuple[Change, Change]
    gold: str | None = None  # the worse change's name: cheats/NAME or seeded


@dataclass
class Prepared:
    pairs: list[Pair] = field(default_factory=list)
    omitted: list[dict[str, Any]] = field(default_factory=list)  # sides, task, repeat, why
    names: set[str] = field(default_factory=set)  # words that would tell the judge whose
    tasks: dict[str, Task] = field(default_factory=dict)  # the judged tasks, by id

    def judged_tasks(self) -> list[Task]:
        """The tasks of the pairs, in id order (gold pairs are made for these)."""
        return [self.tasks[t] for t in sorted({p.task for p in self.pairs})]


def _trials(side: Side) -> tuple[dict[tuple[str, int], Observation], list[Observation]]:
    observations, _notice = read_observations(side.run_dir / OBSERVATIONS_FILE)
    chosen = [o for o in latest_trials(observations) if o.get("arm") == side.arm]
    return {(o["task"], int(o["repeat"])): o for o in chosen}, observations


def _names(sides: Iterable[Side], observations: Iterable[Observation]) -> set[str]:
    found: set[str] = set()
    for side in sides:
        run = read_run_file(side.run_dir)
        settings = run.get("settings") or {}
        found |= {side.label, side.arm or "", str(side.run_dir.resolve()), str(side.run_dir)}
        found |= {str(settings.get(k) or "") for k in ("agent", "model")}
        found.add(str(run.get("run_id") or ""))
    for observation in observations:
        facts = observation.get("agent")
        if facts:
            found |= {facts["name"], str(facts.get("model_reported") or "")}
        found.add(str(observation.get("arm") or ""))
    return {name for name in found if name}


def _tasks(sides: Iterable[Side], tasks: tuple[str, ...] | None, base: Path) -> dict[str, Task]:
    """The tasks of the sides' runs: from `tasks` when given, else each run's own sources."""
    found: dict[str, Task] = {}
    source_lists = {tasks} if tasks else set()
    for side in sides:
        if not tasks:
            recorded = (read_run_file(side.run_dir).get("settings") or {}).get("tasks") or ()
            source_lists.add(tuple(recorded))
    for sources in sorted(source_lists):
        for entry in iter_catalog(sources, base):
            if entry.task is not None:
                found.setdefault(entry.task_id, entry.task)
    return found


def _passed(observation: Observation) -> bool:
    return bool(observation["final_exact"])


def _change(side: Side, observation: Observation) -> Change | None:
    directory = trial_directory(side.run_dir, observation)
    diff = kept_change(directory / CHANGE_FILE, observation)
    return None if diff is None else Change(directory.name, diff, _passed(observation))


def _wanted(which: str, passed: tuple[bool, bool]) -> bool:
    if which == "both-passed":
        return all(passed)
    if which == "both-failed":
        return not any(passed)
    return True


def trial_pairs(
    sides: list[Side], which: str, tasks: tuple[str, ...] | None, base: Path
) -> Prepared:
    """Every matched pair of every two sides (in the order given), as --which asks."""
    if which not in WHICH:
        raise ValueError(f"--which {which!r}: expected one of {', '.join(WHICH)}")
    loaded = [_trials(side) for side in sides]
    known = _tasks(sides, tasks, base)
    prepared = Prepared(names=_names(sides, (o for _, obs in loaded for o in obs)), tasks=known)
    for side, (_, observations) in zip(sides, loaded, strict=True):
        prepared.names |= {trial_directory(side.run_dir, o).name for o in observations}
    for x in range(len(sides)):
        for y in range(x + 1, len(sides)):
            _pair_sides(prepared, (sides[x], sides[y]), (loaded[x][0], loaded[y][0]), known, which)
    return prepared


def _pair_sides(
    prepared: Prepared,
    sides: tuple[Side, Side],
    trials: tuple[dict[tuple[str, int], Observation], dict[tuple[str, int], Observation]],
    known: dict[str, Task],
    which: str,
) -> None:
    labels = (sides[0].label, sides[1].label)
    for task_id, repeat in sorted(set(trials[0]) | set(trials[1])):

        def omit(why: str, task_id: str = task_id, repeat: int = repeat) -> None:
            prepared.omitted.append(
                {"sides": list(labels), "task": task_id, "repeat": repeat, "why": why}
            )

        first, second = (t.get((task_id, repeat)) for t in trials)
        if first is None or second is None:
            omit(f"no trial in {labels[0] if first is None else labels[1]}")
            continue
        if first["status"] != "scored" or second["status"] != "scored":
            omit("a trial was not scored")
            continue
        if not _wanted(which, (_passed(first), _passed(second))):
            continue
        task = known.get(task_id)
        if task is None:
            omit("its task is not in the sources")
            continue
        if {first.get("fixture_hash"), second.get("fixture_hash")} != {task.fixture_hash}:
            omit("its task changed since, or the sides ran different task trees")
            continue
        changes = (_change(sides[0], first), _change(sides[1], second))
        if changes[0] is None or changes[1] is None:
            omit(f"a trial kept no {CHANGE_FILE}")
            continue
        prepared.pairs.append(
            Pair("trial", task_id, repeat, task.prompt, labels, (changes[0], changes[1]))
        )


def _tree_change(task: Task, lay: Callable[[Path], None], change_limit: int) -> str:
    """The diff from the task's input tree to the input with `lay` applied to it."""
    with tempfile.TemporaryDirectory(prefix="agentbench-gold-") as root:
        workspace = Path(root) / "workspace"
        workspace.mkdir()
        materialize(task.input_tree, workspace)
        lay(workspace)
        return workspace_diff(
            task.input_tree, workspace, limit=change_limit, file_limit=change_limit
        )


def _seeded(task: Task, workspace: Path) -> None:
    """The reference half done: laid out, then the first file it changes put back (a file it
    created removed), so the change misses a part of the task."""
    task.apply_reference(workspace)
    original = task.input_tree
    known = set(original.paths())
    for rel in sorted(known | _paths(workspace)):
        before = original.read(rel) if rel in known else None
        target = workspace / rel
        after = target.read_bytes() if target.is_file() else None
        if before == after:
            continue
        if before is None:
            target.unlink()
        else:
            target.write_bytes(before)
        return


def _paths(workspace: Path) -> set[str]:
    return {p.relative_to(workspace).as_posix() for p in workspace.rglob("*") if p.is_file()}


def gold_pairs(tasks: Iterable[Task], change_limit: int = Settings.change_limit) -> list[Pair]:
    """Per task with a reference the judge can be shown: the reference against each of its
    cheats/ trees, or against the seeded half-done reference when it has none."""
    pairs = []
    for task in tasks:
        if task.no_solution or task.container is not None:
            continue
        if task.make_expected is None and task.make_solution is None:
            continue
        reference = Change(REFERENCE, _tree_change(task, task.apply_reference, change_limit), None)
        worse: dict[str, Callable[[Path], None]] = {
            f"cheats/{name}": partial(materialize, tree)
            for name, tree in sorted(task.cheat_trees.items())
        } or {SEEDED: partial(_seeded, task)}
        for name, lay in worse.items():
            change = Change(WORSE, _tree_change(task, lay, change_limit), None)
            if change.diff == reference.diff:
                continue
            sides = (REFERENCE, WORSE)
            pairs.append(Pair("gold", task.id, None, task.prompt, sides, (reference, change), name))
    return pairs
