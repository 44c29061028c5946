"""A warm arm against vanilla with the real codex under bwrap, through the meter, the scripted
server's prefix cache upstream: the priming request is metered apart, the meter refuses the
priming run's second step, and the warm trial's metered cache-hit share is the higher."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from test_agents_real import EDIT, USAGE, api_key, run_agent, task_dir

from pytest_agentbench.plan.arm_trials import trial_order
from pytest_agentbench.tasks.arms import load_arms
from pytest_agentbench.testing.clis import find_cli, missing_reason

if TYPE_CHECKING:
    from pytest_agentbench.testing.pytest_plugin import ServerFactory

pytestmark = pytest.mark.real
pytest_plugins = ["pytest_agentbench.testing.pytest_plugin"]
__all__ = ["api_key", "task_dir"]  # fixtures, re-used

DONE = {"message": "Changed hello to goodbye."}


def vanilla_first_seed(arms_path: Path, task_id: str) -> int:
    """A run seed whose trial order runs vanilla before the warm arm: the server's cache is
    shared by the key, so a vanilla trial after the warm one would find its prompt cached."""
    arms = load_arms(arms_path)
    return next(
        seed
        for seed in range(100)
        if [arm.name for arm, _ in trial_order(task_id, arms, [0], seed)] == ["vanilla", "warm"]
    )


def test_codex_warm_arm_is_primed_apart_and_hits_the_cache_more(
    pytester: pytest.Pytester,
    agentbench_model_server: ServerFactory,
    task_dir: Path,
    api_key: str,
) -> None:
    if find_cli("codex") is None:
        pytest.skip(missing_reason("codex"))
    arms = pytester.path / "arms.toml"
    arms.write_text('[arm.warm]\nprefix_cache = "warm"\n')
    seed = vanilla_first_seed(arms, task_dir.name)
    # vanilla: edit, done; the priming run: one edit (in its scratch workspace); warm: edit, done
    script = {"prefix_cache": "key", "usage": USAGE, "turns": [EDIT, DONE, EDIT, EDIT, DONE]}
    server = agentbench_model_server(script)
    result, report = run_agent(
        pytester,
        "codex",
        server,
        task_dir,
        f"--arms={arms}",
        f"--agentbench-seed={seed}",
        "--agentbench-meter=on",
        sandbox="bwrap",
    )
    result.assert_outcomes(passed=2)
    by_arm = {o["arm"]: o for o in report["observations"]}
    vanilla, warm = by_arm["vanilla"], by_arm["warm"]
    assert [r.turn for r in server.requests] == [0, 1, 2, 3, 4]  # the order the seed chose
    # The priming run: one request answered, its second step refused by the meter, all of it
    # apart from the trial's figures.
    priming = warm["priming"]
    assert priming["cause"] is None
    assert priming["metered"]["statuses"] == {"200": 1, "400": 1}
    assert priming["metered"]["tokens"]["input"] == USAGE["input"]
    assert warm["metered"]["requests"] == vanilla["metered"]["requests"] == 2
    assert warm["metered"]["tokens"]["input"] == 2 * USAGE["input"]
    assert warm["tokens"]["input"] == 2 * USAGE["input"]  # codex's own count agrees
    served = [r.usage["cached_input"] for r in server.requests if r.usage]
    assert warm["metered"]["tokens"]["cached_input"] == sum(served[3:])
    assert vanilla["metered"]["tokens"]["cached_input"] == sum(served[:2])
    assert served[0] == 0  # the first prompt of a cache finds nothing
    assert served[3] == USAGE["input"]  # the warm trial's first prompt was primed, whole
    rows = {row["arm"]: row["cache"] for row in report["arms"]["arms"]}
    assert rows["warm"]["cache_hit_share"] > rows["vanilla"]["cache_hit_share"]
    assert rows["warm"]["metered_trials"] == rows["vanilla"]["metered_trials"] == 1
    assert rows["warm"]["priming"]["requests"] == 2
    metering = report["metering"]["codex"]
    assert metering["requests"] == 4  # the trials' own: the priming run's are apart
    assert metering["priming"]["runs"] == 1
    result.stdout.fnmatch_lines(
        ["cache warm (warm): cache-hit share *% metered over 1 trial; priming apart: 1 run, 2 *"]
    )
    assert api_key not in json.dumps(report)
