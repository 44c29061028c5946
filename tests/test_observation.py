"""The Observation has one typed definition that every producer fills and every reader uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_type_hints

import pytest
from tiny_tasks import make_tasks

from pytest_agentbench.tasks.model import MemoryTree, Task
from pytest_agentbench.tasks.observation import Observation, error_observation

DECLARED = set(get_type_hints(Observation))
REQUIRED = set(Observation.__required_keys__)


def test_an_error_observation_has_every_required_field() -> None:
    observation = error_observation("t", 2, "broken task.toml", status="budget_exhausted")
    assert REQUIRED <= set(observation) <= DECLARED
    assert (
        observation["status"] == "budget_exhausted" and observation["cause"] == "broken task.toml"
    )
    # It gave no message, so no verdict; a task that did not load has no known class.
    assert (observation["final_message"], observation["verdict"]) == (None, None)
    assert "no_solution" not in observation and "category" not in observation


def test_an_error_observation_of_a_loaded_task_names_its_class(tmp_path: Path) -> None:
    task = Task(
        id="t",
        source=str(tmp_path),
        make_input=lambda: MemoryTree({}),
        prompt="p",
        verifier=tmp_path / "verify",
        category="completion-integrity",
        no_solution=True,
    )
    observation = error_observation("t", 0, "sandbox failed", task=task)
    assert (observation["category"], observation["no_solution"]) == ("completion-integrity", True)


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_trials_report_observations_of_the_declared_shape(
    pytester: pytest.Pytester, dist: list[str]
) -> None:
    make_tasks(pytester.path, 3)
    (pytester.path / "tiny-tasks" / "t02" / "task.toml").write_text("prompt = 3\n")  # broken
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--agent=mock", "--sandbox=tmp", "--tasks=tiny-tasks",
        "--repeats=2", "--agentbench-json=report.json", *dist,
    )  # fmt: skip
    assert result.parseoutcomes().get("errors") == 2  # the broken task's two repeats
    observations = json.loads((pytester.path / "report.json").read_text())["observations"]
    assert {o["status"] for o in observations} == {"scored", "error"}
    for observation in observations:
        assert REQUIRED <= set(observation) <= DECLARED, observation
