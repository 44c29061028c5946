"""Segmented trials with the real codex, Claude Code and opencode under bwrap, offline.

A Reasonix task with max_steps = 10 runs in 3 legs with a steer at leg 2: the scripted server
must see the task prompt once, then the steer and the bare continuation as later user turns of
the same conversation, and the report must carry each leg's figures and step share.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from test_agents_real import INPUT, PROMPT, USAGE, api_key, cli, run_agent  # noqa: F401

from pytest_agentbench.tasks.segments import CONTINUATION

if TYPE_CHECKING:
    from pytest_agentbench.testing.pytest_plugin import ServerFactory

pytestmark = pytest.mark.real
pytest_plugins = ["pytest_agentbench.testing.pytest_plugin"]

STEER = "Also keep the second line exactly as it is."
EDIT = {"calls": [{"edit": "notes.txt", "old": "hello", "new": "goodbye"}]}
STEPS = {"codex": None, "claude": [3, 3, 4], "opencode": [3, 3, 4]}  # codex has no step cap


@pytest.fixture
def reasonix_task(pytester: pytest.Pytester) -> Path:
    root = pytester.path / "tasks" / f"legs-{uuid.uuid4().hex[:8]}"
    (root / "workdir").mkdir(parents=True)
    (root / "task.toml").write_text(
        f'prompt = "{PROMPT}"\nmax_steps = 10\ntimeout_sec = 60\n', encoding="utf-8"
    )
    (root / "verify.sh").write_text('test "$(cat notes.txt)" = "$(printf "goodbye\\nworld")"\n')
    (root / "workdir" / "notes.txt").write_text(INPUT, encoding="utf-8")
    return root


def test_three_legs_resume_one_session_with_a_steer(
    pytester: pytest.Pytester,
    agentbench_model_server: ServerFactory,
    cli: str,  # noqa: F811 - the fixtures imported above
    reasonix_task: Path,
    api_key: str,  # noqa: F811
) -> None:
    # Leg 1 only answers; leg 2 (the steer) makes the edit; leg 3 (the continuation) answers.
    turns = [{"message": "Looked."}, EDIT, {"message": "Edited."}, {"message": "All done."}]
    server = agentbench_model_server({"usage": USAGE, "turns": turns})
    result, report = run_agent(
        pytester,
        cli,
        server,
        reasonix_task,
        "--agentbench-segments=3",
        f"--agentbench-steer={STEER}@2",
    )
    result.assert_outcomes(passed=1)
    requests = server.tool_requests()
    last = json.dumps(requests[-1].body)
    # One conversation: the task once, then the steer, then the continuation, in order.
    assert last.count(PROMPT) == 1 and last.count(STEER) == 1 and last.count(CONTINUATION) == 1
    assert last.index(PROMPT) < last.index(STEER) < last.index(CONTINUATION)
    assert all(PROMPT in json.dumps(r.body) for r in requests)
    assert not any(STEER in json.dumps(r.body) for r in requests if r.turn == 0)
    (obs,) = report["observations"]
    legs = obs["legs"]
    assert [leg["prompt"] for leg in legs] == ["task", "steer", "continuation"]
    assert [leg["exact"] for leg in legs] == [False, True, True]
    assert [leg["step_limit"] for leg in legs] == [3, 3, 4]  # recorded for codex too
    enforced = STEPS[cli]
    assert enforced is None or [leg["step_limit"] for leg in legs] == enforced
    assert all(leg["exit_code"] == 0 and leg["wall_s"] > 0 for leg in legs)
    assert sum(leg["requests"] for leg in legs) == obs["metered"]["requests"]
    assert all(leg["tokens"] and leg["tokens"]["output"] for leg in legs)
    assert obs["first_exact"] is True and len(obs["rounds"]) == 1
    assert report["legs"]["trials"] == 1 and len(report["legs"]["legs"]) == 3
    assert report["run"]["segments"] == 3 and report["run"]["steers"] == [[2, STEER]]
    result.stdout.fnmatch_lines(["legs of 1 segmented trial*"])
