"""SWE-bench instances as tasks: one JSON object a line, as the SWE-bench datasets ship them.

Each instance runs in its evaluation image, with the repository at /testbed at base_commit; the
agent is shown the problem statement alone. Its change is the diff against base_commit, graded
in a fresh container of the same image by the swebench package's own eval script, log parser
and report (grading/swebench.py). The oracle applies the instance's ``patch``.

FAIL_TO_PASS and PASS_TO_PASS are lists or JSON strings holding lists. The image is the
instance's ``image`` field, else swebench's name for it, ``sweb.eval.x86_64.<instance id, its
"__" written "_1776_">:latest`` (the names of its published images), filled into the
--swebench-images template. Nothing is built or pulled: a missing image is named with the fix.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentbench.tasks.keys import did_you_mean
from pytest_agentbench.tasks.model import ContainerSpec, Task, TaskError, image_tree

WORKDIR = "/testbed"  # where every SWE-bench image holds the repository
DEFAULT_IMAGES = "sweb.eval.x86_64.{hub_id}:latest"
DEFAULT_TIMEOUT = 1800.0  # the official harness's default per-instance evaluation timeout
REQUIRED: tuple[str, ...] = ("instance_id", "repo", "version", "base_commit", "problem_statement")
REQUIRED += ("patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS")
# Fields of the published datasets this harness has no use for; any other key is a misspelling.
IGNORED = frozenset(
    {"hints_text", "created_at", "environment_setup_commit", "difficulty", "image_assets"}
)
OPTIONAL = frozenset({"image"})
KNOWN = frozenset(REQUIRED) | IGNORED | OPTIONAL
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(__[A-Za-z0-9._-]+)?\Z")
_COMMIT = re.compile(r"[0-9a-f]{7,40}\Z")


@dataclass(frozen=True)
class Loaded:
    """One line of an instances file: its task, or the error that names what to fix."""

    task_id: str
    task: Task | None
    error: str | None


def image_name(instance_id: str, template: str = DEFAULT_IMAGES) -> str:
    """The evaluation image of an instance: the template with {id} (the instance id in lower
    case, as swebench names images it builds) and {hub_id} (that id with "__" written
    "_1776_", as its published images are named) filled in."""
    lower = instance_id.lower()
    return template.format(id=lower, hub_id=lower.replace("__", "_1776_"))


def load_instances(path: Path, images: str = DEFAULT_IMAGES) -> list[Loaded]:
    """Every instance of a JSONL file, in the file's order; a bad line is an error naming the
    file, the line, the field and the fix, and the other lines still load. A file that cannot
    be read at all is a TaskError."""
    path = Path(os.path.abspath(path))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: cannot be read ({exc}); give a UTF-8 JSONL file") from None
    loaded: list[Loaded] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        task_id = f"line{number}"
        try:
            record = _record(line, where)
            task_id = str(record["instance_id"])
            if task_id in seen:
                raise TaskError(
                    f"{where}: instance_id {task_id!r} is also on line {seen[task_id]}; "
                    "give each instance once"
                )
            seen[task_id] = number
            loaded.append(Loaded(task_id, _task(record, path, where, images), None))
        except TaskError as exc:
            loaded.append(Loaded(task_id, None, str(exc)))
    return loaded


def _record(line: str, where: str) -> dict[str, Any]:
    """The instance on one line, its keys and their types checked."""
    try:
        record = json.loads(line)
    except ValueError as exc:
        raise TaskError(f"{where}: not JSON ({exc}); write one JSON object a line") from None
    if not isinstance(record, dict):
        raise TaskError(
            f"{where}: expected a JSON object (an instance), got {type(record).__name__}"
        )
    for key in sorted(set(record) - KNOWN):
        raise TaskError(
            f"{where}: unknown field {key!r}{did_you_mean(key, KNOWN)}; an instance holds "
            f"{', '.join(REQUIRED)} and optionally image (fix the spelling or remove it)"
        )
    for key in REQUIRED:
        if key not in record:
            raise TaskError(f"{where}: field {key!r} is missing; every SWE-bench instance has it")
    for key in (*(k for k in REQUIRED if not k.endswith("_PASS")), *OPTIONAL):
        if key in record and not isinstance(record[key], str):
            raise TaskError(f"{where}: field {key!r} must be a string, got {record[key]!r:.60}")
    instance_id = record["instance_id"]
    if not _ID.fullmatch(instance_id):
        raise TaskError(
            f"{where}: field 'instance_id' {instance_id!r}: expected owner__repo-number "
            "(letters, digits, . _ -), as it names the trial and the image"
        )
    if not _COMMIT.fullmatch(record["base_commit"]):
        raise TaskError(
            f"{where}: field 'base_commit' {record['base_commit']!r}: expected a commit hash "
            "(hex, as git rev-parse prints it)"
        )
    for key in ("problem_statement", "test_patch"):
        if not record[key].strip():
            raise TaskError(f"{where}: field {key!r} is empty; the instance needs it")
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        record[key] = _test_list(record[key], key, where)
    if not record["FAIL_TO_PASS"]:
        raise TaskError(
            f"{where}: field 'FAIL_TO_PASS' is empty; name the tests the fix makes pass"
        )
    return record


def _test_list(value: Any, key: str, where: str) -> list[str]:
    """A list of test names, given as a list or as a JSON string holding one."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskError(
            f"{where}: field {key!r} must be a list of test names, or a JSON string holding "
            'one (["tests/test_x.py::test_y"])'
        )
    return list(value)


def _task(record: dict[str, Any], path: Path, where: str, images: str) -> Task:
    instance_id = record["instance_id"]
    image = record.get("image") or image_name(instance_id, images)
    instance = {key: record[key] for key in REQUIRED}
    digest = hashlib.sha256(b"agentbench-swebench-1\0")
    digest.update(json.dumps({**instance, "image": image}, sort_keys=True).encode())
    spec = ContainerSpec(
        context=path.parent,
        context_hash=image,
        tests=path,
        test_script="",
        image=image,
        content_hash=digest.hexdigest(),
        workdir=WORKDIR,
        origin=where,
        instance=instance,
    )
    return Task(
        id=instance_id,
        prompt=record["problem_statement"],
        source=where,
        make_input=lambda: image_tree(spec),
        timeout=DEFAULT_TIMEOUT,
        verify_timeout=DEFAULT_TIMEOUT,
        category=record["repo"],
        meta={"format": "swebench", "repo": record["repo"], "version": record["version"]},
        container=spec,
        exit_scored=False,  # the official grade reads the tests alone
    )


def instance_fields(spec: ContainerSpec) -> Mapping[str, Any]:
    """The instance a SWE-bench task was loaded from (its official fields)."""
    assert spec.instance is not None
    return spec.instance


def require_swebench(path: Path) -> None:
    """A usage problem, before any trial, when the swebench package that grades the instances
    of a swebench:FILE source is not installed (looked for, not imported: it is heavy)."""
    import importlib.util

    if importlib.util.find_spec("swebench") is None:
        raise ValueError(
            f"--tasks swebench:{path}: SWE-bench instances are graded by the swebench package, "
            "which is not installed; install it: pip install 'pytest-agentbench[swebench]'"
        )
