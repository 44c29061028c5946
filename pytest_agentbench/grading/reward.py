"""A reward task's grade (Harbor): its tests run on a snapshot of the trial's finished
container, in a fresh container of the task's image, and the reward they write decides it."""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_agentbench.fs.filework import remove_later
from pytest_agentbench.grading.grade import VERIFIER_OUTPUT_LIMIT, Grade
from pytest_agentbench.sandbox.ownership import owned_dir
from pytest_agentbench.tasks.model import ContainerSpec, Task

if TYPE_CHECKING:  # imported where a container grades: a run without Docker never loads it
    from pytest_agentbench.sandbox.docker import DockerProvider, DockerSandbox
    from pytest_agentbench.sandbox.engines import Engine

TESTS_DIR = "/tests"
REWARD_DIR = "/logs/verifier"
REWARD_FILES = ("reward.txt", "reward.json")  # read in this order, as Harbor's docs say


def grade_in_container(sandbox: DockerSandbox, task: Task) -> Grade:
    """Run the task's tests on a snapshot of the finished container; exact when reward is 1."""
    from pytest_agentbench.sandbox.docker import engine_errors

    spec = task.container
    assert spec is not None
    provider, engine = sandbox.provider, sandbox.engine_of
    scratch = Path(tempfile.mkdtemp(prefix="agentbench-verify-", dir=owned_dir()))
    try:
        lost = provider.lost(engine)
        with engine_errors("the task's verifier", lost), snapshot_of(sandbox) as image:
            logs = scratch / "logs"
            logs.mkdir()
            exit_code, output = _run_verifier(provider, engine, image, spec, task, logs)
            reward, where = read_reward(logs)
    finally:
        remove_later(scratch)
    passed = reward is not None and math.isclose(reward, 1.0)
    shown = f"reward {reward:g} ({where})" if reward is not None else where
    text = f"{shown}\n{output}"[-VERIFIER_OUTPUT_LIMIT:]
    return Grade(
        exact=passed,
        eof_normalized=passed,
        verifier_exit_code=exit_code,
        verifier_output=text,
        reward=reward,
        reward_graded=True,
    )


@contextlib.contextmanager
def snapshot_of(sandbox: DockerSandbox) -> Iterator[str]:
    """The id of an image committed from the trial's finished container, on its engine, for
    as long as the block runs. The container's labels carry over: its owner, whose death lets
    a later run reap it."""
    from pytest_agentbench.sandbox.docker import LABEL_SNAPSHOT

    snapshot = sandbox.container.commit(conf={"Labels": {LABEL_SNAPSHOT: "1"}})
    try:
        yield snapshot.id
    finally:
        with contextlib.suppress(Exception):
            sandbox.engine_of.client.images.remove(snapshot.id, force=True)


def _run_verifier(
    provider: DockerProvider,
    engine: Engine,
    image: str,
    spec: ContainerSpec,
    task: Task,
    logs: Path,
) -> tuple[int | None, str]:
    """(exit code or None at the deadline, the output's tail) of bash /tests/test.sh, run as
    the verifier's user with tests/ at /tests and an empty /logs/verifier it may write; the
    reward files it leaves there are copied to logs."""
    from pytest_agentbench.sandbox.task_image import host_values, run_as_verifier, task_limits

    timeout = task.verify_timeout or task.timeout
    empty = logs / "empty"
    empty.mkdir(mode=0o777)
    empty.chmod(0o777)  # as Harbor leaves it: writable by any verifier user
    exit_code, output = run_as_verifier(
        provider,
        engine,
        image,
        spec,
        ["bash", spec.test_script],
        env=host_values(spec, spec.verifier_env, "verifier"),
        limits=task_limits(provider, spec),
        timeout=timeout,
        put={TESTS_DIR: spec.tests, REWARD_DIR: empty},
        take={f"{REWARD_DIR}/{name}": logs / name for name in REWARD_FILES},
    )
    text = output[-VERIFIER_OUTPUT_LIMIT:].decode("utf-8", "replace")
    if exit_code is None:
        text += f"\nverifier timed out after {timeout:g} s (timeout_sec in [verifier])"
    return exit_code, text


def read_reward(logs: Path) -> tuple[float | None, str]:
    """(the reward, where it came from): reward.txt's number, else reward.json's "reward";
    None, saying why, when neither holds one."""
    text_file, json_file = (logs / name for name in REWARD_FILES)
    if text_file.is_file():
        raw = text_file.read_text(encoding="utf-8", errors="replace").strip()
        try:
            return float(raw), f"{REWARD_DIR}/{text_file.name}"
        except ValueError:
            return None, f"{REWARD_DIR}/{text_file.name} holds no number: {raw[:80]!r}"
    if json_file.is_file():
        try:
            value = json.loads(json_file.read_text(encoding="utf-8")).get("reward")
        except (ValueError, AttributeError):
            value = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value), f"{REWARD_DIR}/{json_file.name}"
        return None, f'{REWARD_DIR}/{json_file.name} holds no numeric "reward"'
    return None, f"no reward: the verifier wrote neither {REWARD_DIR}/reward.txt nor reward.json"
