"""The Observation has one typed definition that every producer fills and every reader uses."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import get_type_hints

import pytest
from tiny_tasks import make_tasks

import pytest_agentbench
from pytest_agentbench.observation import Observation, error_observation
from pytest_agentbench.tasks.model import MemoryTree, Task

PACKAGE = Path(pytest_agentbench.__file__).parent
DECLARED = set(get_type_hints(Observation))
REQUIRED = set(Observation.__required_keys__)


def imported_modules(module: str) -> set[str]:
    """Every pytest_agentbench module a module imports, at any level of its code."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name.removeprefix("pytest_agentbench.") for name in names if "agentbench" in name}


@pytest.mark.parametrize(
    ("module", "never"),
    [
        ("observation", {"collect", "fixtures", "resume", "store", "trial"}),
        ("collect", {"fixtures", "resume", "store"}),
        ("fixtures", {"resume", "store"}),
        ("store", {"collect", "fixtures", "resume"}),
    ],
)
def test_the_trial_modules_depend_one_way(module: str, never: set[str]) -> None:
    """observation <- collect <- fixtures and observation <- store <- resume: no cycle to dodge."""
    assert imported_modules(module) & never == set()


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
