"""Harbor / Terminal-Bench 2 tasks as they are: task.toml, instruction.md, environment/,
tests/test.sh and solution/solve.sh.

The task runs in an image built from environment/Dockerfile (once per content of
environment/), and only under --sandbox=docker. Its workspace is the image's working directory.
Once the agent's processes are gone, tests/ is copied to /tests and ``bash /tests/test.sh``
runs from the working directory; the trial is exact when the reward it writes to
/logs/verifier/reward.txt (or the ``reward`` of reward.json) is 1, whatever the agent's exit
status or timeout (Harbor verifies a timed-out agent's work and scores the reward alone). The
oracle copies solution/ to /solution and runs solve.sh there. The agent, solve.sh and the
tests run as Harbor runs them: as the image's USER (root when the Dockerfile sets none), or as
[agent] / [verifier] user.
[metadata] is free form, bar its `test_command` (a string: the command that runs the task's
own tests in its workspace, for changed-line coverage and the trajectory's figures), as
Harbor's model has no place for one; [verifier] and [agent] timeouts and [environment] cpus,
memory and internet access are honoured.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_agentbench.tasks.directory import (
    field,
    flag,
    known_keys_only,
    read_toml,
    test_command_field,
)
from pytest_agentbench.tasks.model import ContainerSpec, Task, TaskError, image_tree

TASK_FILE = "task.toml"
INSTRUCTION = "instruction.md"
DOCKERFILE = "environment/Dockerfile"
TEST_SCRIPT = "tests/test.sh"
SOLVE_SCRIPT = "solution/solve.sh"
DEFAULT_TIMEOUT = 600.0  # Harbor's default for both the agent and the verifier
DEFAULT_BUILD_TIMEOUT = 600.0
MB = 1 << 20
# Harbor's task.toml model, section by section: keys read here, keys that are accepted because
# they change nothing in this harness, and keys whose meaning it cannot give (an error).
SECTIONS: dict[str, frozenset[str]] = {
    "verifier": frozenset({"timeout_sec", "env", "user", "network_mode", "allowed_hosts"}),
    "agent": frozenset({"timeout_sec", "user", "network_mode", "allowed_hosts"}),
    "solution": frozenset({"env"}),
    "environment": frozenset(
        {
            "build_timeout_sec",
            "docker_image",
            "cpus",
            "memory_mb",
            "memory",
            "storage_mb",
            "storage",
            "gpus",
            "gpu_types",
            "allow_internet",
            "network_mode",
            "allowed_hosts",
            "mcp_servers",
            "env",
            "skills_dir",
            "healthcheck",
        }
    ),
}
TOP_KEYS = frozenset({"version", "schema_version", "metadata", "source", "task", *SECTIONS})
# Keys with a meaning this harness does not give: a task that sets them would be run wrongly.
UNSUPPORTED = {
    ("environment", "gpus"): "this harness gives containers no GPU",
    ("environment", "mcp_servers"): "this harness starts no MCP server",
    ("environment", "healthcheck"): "this harness runs no health check",
    ("environment", "skills_dir"): "arms deliver skills here (docs/arms.md)",
    ("environment", "env"): "the task's container gets no host variables",
    ("verifier", "allowed_hosts"): "the network is on or off, never filtered",
    ("agent", "allowed_hosts"): "the network is on or off, never filtered",
    ("environment", "allowed_hosts"): "the network is on or off, never filtered",
}


def load_harbor_task(task_dir: Path) -> Task:
    """Load one Harbor task directory; raise TaskError naming the file and the fix."""
    task_dir = Path(os.path.abspath(task_dir))
    toml_path = task_dir / TASK_FILE
    data = read_toml(toml_path)
    sections = _sections(data, toml_path)
    metadata = data.get("metadata", {})
    if not isinstance(metadata, dict):
        raise TaskError(f"{toml_path}: [metadata] must be a table")
    prompt = _text_file(task_dir / INSTRUCTION, "the instruction the agent is given")
    if not prompt.strip():
        raise TaskError(f"{task_dir / INSTRUCTION}: is empty; write the instruction there")
    env = sections["environment"]
    image = (
        field(env, "docker_image", str, toml_path, "an image name")
        if "docker_image" in env
        else None
    )
    dockerfile = task_dir / DOCKERFILE
    if image is None:
        _text_file(dockerfile, "the Dockerfile the task's image is built from")
    tests = task_dir / "tests"
    _text_file(task_dir / TEST_SCRIPT, "the verifier, run once the agent is done")
    solution = task_dir / "solution"
    has_solution = solution.is_dir()
    if has_solution:
        _text_file(task_dir / SOLVE_SCRIPT, "the reference solution the oracle runs")
    network = True
    if "allow_internet" in env:
        network = flag(env, "allow_internet", toml_path)
    if env.get("network_mode") is not None:
        mode = field(env, "network_mode", str, toml_path, "public or no-network")
        if mode not in ("public", "no-network"):
            raise TaskError(
                f"{toml_path}: [environment] network_mode {mode!r}: this harness runs a task's "
                "container with the network on (public) or off (no-network); choose one"
            )
        network = mode == "public"
    metadata_tags = metadata.get("tags", [])
    tags = (
        tuple(metadata_tags)
        if isinstance(metadata_tags, list) and all(isinstance(t, str) and t for t in metadata_tags)
        else ()
    )
    category = metadata.get("category")
    spec = ContainerSpec(
        context=dockerfile.parent,
        context_hash=_tree_hash(dockerfile.parent) if image is None else image,
        tests=tests,
        test_script=f"/{TEST_SCRIPT}",
        verifier_env=_env(sections["verifier"], "verifier", toml_path),
        solution=solution if has_solution else None,
        solve_script=f"/{SOLVE_SCRIPT}",
        solution_env=_env(sections["solution"], "solution", toml_path),
        image=image,
        build_timeout=_seconds(env, "build_timeout_sec", toml_path, DEFAULT_BUILD_TIMEOUT),
        cpus=float(_positive(env, "cpus", toml_path)) if "cpus" in env else None,
        memory_bytes=_memory(env, toml_path),
        network=network,
        content_hash=_tree_hash(task_dir),
        agent_user=_user(sections["agent"], "agent", toml_path),
        verifier_user=_user(sections["verifier"], "verifier", toml_path),
    )
    return Task(
        id=task_dir.name,
        prompt=prompt,
        source=str(task_dir),
        make_input=lambda: image_tree(spec),
        timeout=_seconds(sections["agent"], "timeout_sec", toml_path, DEFAULT_TIMEOUT),
        verify_timeout=_seconds(sections["verifier"], "timeout_sec", toml_path, DEFAULT_TIMEOUT),
        category=category if isinstance(category, str) else "",
        tags=tags,
        meta={"format": "harbor"},
        container=spec,
        exit_scored=False,
        # Harbor's own model has none: a task may name one in its free-form [metadata]
        test_command=test_command_field(metadata, toml_path),
    )


def _sections(data: dict[str, Any], toml_path: Path) -> dict[str, dict[str, Any]]:
    """The [verifier], [agent], [solution] and [environment] tables, their keys checked."""
    known_keys_only(
        data,
        TOP_KEYS,
        toml_path,
        "a Harbor task.toml holds",
        fix="fix the spelling, or move it under [metadata]",
    )
    sections: dict[str, dict[str, Any]] = {}
    for name, known in SECTIONS.items():
        table = data.get(name, {})
        if not isinstance(table, dict):
            raise TaskError(f"{toml_path}: [{name}] must be a table")
        known_keys_only(table, known, toml_path, "it reads", within=(name,))
        for key in sorted(table):
            why = UNSUPPORTED.get((name, key))
            if why is not None and table[key] not in (None, [], {}, 0):
                raise TaskError(
                    f"{toml_path}: [{name}] {key} is not supported ({why}); remove it to run "
                    "the task here"
                )
        sections[name] = table
    return sections


def _text_file(path: Path, what: str) -> str:
    """The UTF-8 text of a file the format requires; missing or unreadable is a TaskError."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskError(f"{path}: missing; a Harbor task needs it ({what})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: cannot be read ({exc}); make it a readable UTF-8 file") from None


def _positive(table: dict[str, Any], key: str, toml_path: Path) -> float:
    value = field(table, key, float, toml_path, "a positive number")
    if value <= 0:
        raise TaskError(f"{toml_path}: field {key!r} must be a positive number, got {value}")
    return float(value)


def _seconds(table: dict[str, Any], key: str, toml_path: Path, default: float) -> float:
    return _positive(table, key, toml_path) if table.get(key) is not None else default


def _memory(env: dict[str, Any], toml_path: Path) -> int | None:
    """Bytes from memory_mb, or from the older memory = "2G" form; None when neither is set."""
    if "memory_mb" in env:
        return int(_positive(env, "memory_mb", toml_path) * MB)
    if env.get("memory") is None:
        return None
    text = field(env, "memory", str, toml_path, "a size such as 2G or 512M").strip().upper()
    units = {"G": 1024 * MB, "M": MB, "K": 1024}
    try:
        return int(float(text[:-1]) * units[text[-1:]])
    except (KeyError, ValueError):
        raise TaskError(
            f"{toml_path}: [environment] memory {text!r}: expected a size such as 2G or 512M "
            "(or write memory_mb)"
        ) from None


def _user(table: dict[str, Any], name: str, toml_path: Path) -> str:
    """[agent] or [verifier] user: a user name or uid as docker takes it ("name", "uid",
    "name:group"); "" when absent, for the image's USER."""
    user = table.get("user")
    if user is None:
        return ""
    text = str(user)
    who, colon, group = text.partition(":")
    well_formed = (
        isinstance(user, str | int)
        and not isinstance(user, bool)
        and who
        and not text.startswith("-")
        and not (colon and not group)
        and ":" not in group
        and not any(c.isspace() for c in text)
    )
    if well_formed:
        return text
    raise TaskError(
        f'{toml_path}: [{name}] user {user!r}: expected a user name or uid ("agent", 1000, '
        "or \"agent:staff\"), as the image's /etc/passwd knows it; remove it for the image's USER"
    )


def _env(table: dict[str, Any], name: str, toml_path: Path) -> Mapping[str, str]:
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise TaskError(f"{toml_path}: [{name}] env must be a table of strings")
    return dict(env)


def _tree_hash(root: Path) -> str:
    """SHA-256 over every file below root (its relative path, mode bits and bytes), in order."""
    digest = hashlib.sha256(b"agentbench-harbor-1\0")
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).encode()
            executable = os.access(path, os.X_OK)
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError as exc:
                raise TaskError(f"{path}: cannot be read ({exc}); make it readable") from None
            digest.update(b"%d:%s:%d:%d\0" % (len(rel), rel, executable, len(data)))
            digest.update(data)
    return digest.hexdigest()
