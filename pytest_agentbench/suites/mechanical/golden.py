"""The committed golden list of task ids and fixture hashes, and its comparison.

Any change to a generated task changes its fixture hash; the golden file makes that
change visible in review and ties it to a SUITE_VERSION bump.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.suites.mechanical.registry import specs
from pytest_agentbench.suites.mechanical.spec import SUITE_NAME, SUITE_VERSION
from pytest_agentbench.tasks.hashing import task_set_hash

GOLDEN_PATH = Path(__file__).with_name("golden.tsv")
HISTORY_PATH = Path(__file__).with_name("versions.tsv")
REGENERATE = "python -m pytest_agentbench.suites.mechanical --write-golden"


@dataclass(frozen=True)
class Golden:
    version: str
    hashes: dict[str, str]  # task id -> fixture hash
    task_set: str


def current() -> Golden:
    """The suite as the code generates it now (builds every task, one at a time)."""
    hashes = {spec.id: spec.build().fixture_hash() for spec in specs()}
    return Golden(SUITE_VERSION, hashes, task_set_hash(hashes.values()))


def render(golden: Golden) -> str:
    rows = [
        f"# {SUITE_NAME} suite, version {golden.version}; regenerate with: {REGENERATE}",
        "# id\tfixture_hash",
        *(f"{task_id}\t{digest}" for task_id, digest in sorted(golden.hashes.items())),
        f"# task-set\t{golden.task_set}",
    ]
    return "\n".join(rows) + "\n"


def parse(text: str, source: Path = GOLDEN_PATH) -> Golden:
    version, task_set, hashes = "", "", {}
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("# task-set\t"):
            task_set = line.split("\t", 1)[1]
        elif line.startswith(f"# {SUITE_NAME} suite, version "):
            version = line.split("version ", 1)[1].split(";", 1)[0]
        elif line and not line.startswith("#"):
            fields = line.split("\t")
            if len(fields) != 2:
                raise ValueError(f"{source}:{number}: expected 'id<TAB>hash'; run {REGENERATE}")
            hashes[fields[0]] = fields[1]
    if not version or not task_set:
        raise ValueError(f"{source}: missing version or task-set line; run {REGENERATE}")
    return Golden(version, hashes, task_set)


def read(path: Path = GOLDEN_PATH) -> Golden:
    return parse(path.read_text(encoding="utf-8"), path)


def read_history(path: Path = HISTORY_PATH) -> dict[str, str]:
    """Suite version -> task-set hash, one line per released version."""
    history = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line and not line.startswith("#"):
            fields = line.split("\t")
            if len(fields) != 2:
                raise ValueError(f"{path}:{number}: expected 'version<TAB>task-set hash'")
            history[fields[0]] = fields[1]
    return history


def write(path: Path = GOLDEN_PATH, history_path: Path = HISTORY_PATH) -> Golden:
    """Rewrite the golden file; refuse when the tasks changed under an old version."""
    golden = current()
    history = read_history(history_path) if history_path.exists() else {}
    recorded = history.get(golden.version)
    if recorded is not None and recorded != golden.task_set:
        raise SystemExit(
            f"the tasks changed but SUITE_VERSION is still {golden.version!r} "
            f"(recorded in {history_path.name}); bump SUITE_VERSION in spec.py, then rerun"
        )
    path.write_text(render(golden), encoding="utf-8")
    if recorded is None:
        with history_path.open("a", encoding="utf-8") as out:
            if not history:
                out.write("# suite version\ttask-set hash\n")
            out.write(f"{golden.version}\t{golden.task_set}\n")
    return golden


def differences(committed: Golden, generated: Golden) -> list[str]:
    """Human-readable differences, empty when the suite matches the golden file."""
    out = []
    if committed.version != generated.version:
        out.append(f"suite version: golden {committed.version}, code {generated.version}")
    for task_id in sorted(committed.hashes.keys() - generated.hashes.keys()):
        out.append(f"removed: {task_id}")
    for task_id in sorted(generated.hashes.keys() - committed.hashes.keys()):
        out.append(f"added: {task_id}")
    for task_id in sorted(committed.hashes.keys() & generated.hashes.keys()):
        if committed.hashes[task_id] != generated.hashes[task_id]:
            out.append(f"changed: {task_id}")
    if committed.task_set != generated.task_set and not out:
        out.append("task-set hash differs")
    return out
