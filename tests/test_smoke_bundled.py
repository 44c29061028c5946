"""The bundled tasks are sound: the oracle passes every one, nop fails every one."""

import pytest

pytestmark = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])


def test_oracle_passes_every_bundled_task(pytester: pytest.Pytester, dist: list[str]) -> None:
    result = pytester.runpytest_subprocess("--agent=oracle", "--tasks=builtin:tasks", *dist)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0
    assert outcomes["passed"] >= 5


def test_nop_fails_every_bundled_task(pytester: pytest.Pytester, dist: list[str]) -> None:
    result = pytester.runpytest_subprocess("--agent=nop", "--tasks=builtin:tasks", *dist)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) == 0
    assert outcomes["failed"] >= 5
