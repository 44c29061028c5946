"""Tasks that bring their own image over a pool of two real engines (the machine's, and a
second dockerd on TLS TCP at 127.0.0.1, tests/docker_engines.py), everything copied through the
engine API: a Harbor task's image is built on each engine the pool places its trials on, an
instance's SWE-bench image is used as each engine holds it, and each trial's verifier runs on
the engine that ran it. An instance whose image one engine lacks errors there, naming it."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from docker_engines import SecondEngine, second_engine
from test_engine_pool_real import MAIN
from test_foreign_harbor import SUITE
from test_foreign_swebench import IMAGE, _base_commit, instance, write_instances

from conftest import TEST_IMAGE, skip_unless_sandbox

pytestmark = pytest.mark.real

TASK = "fix-greeting"  # its Dockerfile only copies a file: it builds on any engine holding its base


@pytest.fixture(scope="module")
def engine() -> Iterator[SecondEngine]:
    """A second engine holding the test image (the Harbor fixtures' base) and the tiny
    SWE-bench image, loaded once for the module."""
    skip_unless_sandbox("docker")
    _base_commit()  # skips without the tiny instance's image
    try:
        with second_engine(TEST_IMAGE, IMAGE) as started:
            yield started
    except RuntimeError as error:
        pytest.skip(f"no second Docker engine: {error}")


def _pool(engine: SecondEngine, *first: str) -> list[str]:
    """A pool of one slot per engine (the machine's listed first unless first says)."""
    hosts = list(first) or [f"{MAIN}#slots=1", f"{engine.tcp_url}#slots=1"]
    return [
        "-p",
        "no:cacheprovider",
        "--sandbox=docker",
        *(f"--docker-host={host}" for host in hosts),
        "--agentbench-json=report.json",
        "-rA",
    ]


def _observations(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    report = json.loads((pytester.path / "report.json").read_text())
    return list(report["observations"])


def _both_engines(pytester: pytest.Pytester, engine: SecondEngine, *args: str) -> list[Any]:
    """Two trials at once over the pool of one slot per engine: one on each."""
    result = pytester.runpytest_subprocess(
        *_pool(engine), "--repeats=2", "--agentbench-concurrency=2", *args, timeout=300
    )
    observations = _observations(pytester)
    assert sorted(o["engine"] for o in observations) == sorted([MAIN, engine.tcp_name])
    assert all(o["status"] == "scored" for o in observations), observations
    return [result, observations]


def test_a_harbor_task_builds_on_each_engine_and_is_graded_where_it_ran(
    pytester: pytest.Pytester, engine: SecondEngine
) -> None:
    tasks = f"--tasks={SUITE / TASK}"
    result, observations = _both_engines(pytester, engine, "--agent=oracle", tasks)
    result.assert_outcomes(passed=2)
    assert [o["rounds"][0]["reward"] for o in observations] == [1.0, 1.0]
    # Built there, labelled as on the machine's engine: one image of the task's content.
    built = _images(engine, "--filter", "label=io.agentbench.context-hash")
    assert [tag.startswith("agentbench-task:env-") for tag in built] == [True], built
    result, observations = _both_engines(pytester, engine, "--agent=nop", tasks)
    result.assert_outcomes(failed=2)
    assert [o["rounds"][0]["reward"] for o in observations] == [0.0, 0.0]
    result.stdout.fnmatch_lines(["FAILED *::r* - reward 0 (/logs/verifier/reward.txt)"])


def test_a_swebench_instance_runs_in_each_engines_image_and_is_graded_where_it_ran(
    pytester: pytest.Pytester, engine: SecondEngine
) -> None:
    write_instances(pytester.path / "tiny.jsonl", instance(base_commit=_base_commit()))
    source = "--tasks=swebench:tiny.jsonl"
    result, observations = _both_engines(pytester, engine, "--agent=oracle", source)
    result.assert_outcomes(passed=2)
    assert all(o["final_exact"] for o in observations)
    result, observations = _both_engines(pytester, engine, "--agent=nop", source)
    result.assert_outcomes(failed=2)
    assert not any(o["final_exact"] for o in observations)


def test_an_instance_image_one_engine_lacks_is_named_there_and_never_pulled(
    pytester: pytest.Pytester, engine: SecondEngine
) -> None:
    local_only = f"agentbench-swebench-tiny:only-here-{uuid.uuid4().hex[:8]}"
    subprocess.run(["docker", "tag", IMAGE, local_only], check=True)
    try:
        line = instance(base_commit=_base_commit(), image=local_only)
        path = write_instances(pytester.path / "tiny.jsonl", line)
        # The second engine listed first: the one trial goes there (the first on a tie).
        hosts = (engine.tcp_url, MAIN)
        result = pytester.runpytest_subprocess(
            *_pool(engine, *hosts), "--agent=oracle", "--tasks=swebench:tiny.jsonl", timeout=300
        )
    finally:
        subprocess.run(["docker", "rmi", local_only], check=False, capture_output=True)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            f"*{path}:1: the instance's image {local_only!r} is not on the Docker engine "
            f"{engine.tcp_name}; *`docker save {local_only} | docker -H {engine.tcp_name} load`*"
        ]
    )
    assert local_only not in _images(engine)


def _images(engine: SecondEngine, *filters: str) -> list[str]:
    """The second engine's images, as repository:tag."""
    argv = ["docker", "-H", engine.unix_url, "images", *filters]
    listed = subprocess.run(
        [*argv, "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True, text=True, check=True
    )
    return listed.stdout.split()
