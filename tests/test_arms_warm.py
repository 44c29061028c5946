"""Warm arms (prefix_cache = "warm"): a priming run goes first, its figures apart, and the
scripted server's prefix cache shows the effect in the arms block.

The agent here is a command that speaks the Responses protocol to the scripted server, as a
CLI would: its instructions (the arm's guidance first, then a long fixed system text), one
tool, and the conversation so far; two model requests a run, one in a priming run
(AGENTBENCH_PRIMING). The guidance comes first so that the two arms' prompts part early: the
test then holds in any trial order, -n 2 included.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_agentbench.testing.pytest_plugin import ServerFactory

pytest_plugins = ["pytest_agentbench.testing.pytest_plugin"]
DISTS = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])

AGENT = """
import json, os, pathlib, urllib.request

guidance = os.environ.get("AGENTBENCH_GUIDANCE_FILE")
instructions = (open(guidance).read() if guidance else "") + "You edit files. " * 100
prompt = open(os.environ["AGENTBENCH_PROMPT_FILE"]).read()
conversation = [{"role": "user", "content": prompt}]
totals = {"input": 0, "cached_input": 0, "output": 0}
for step in range(1 if os.environ.get("AGENTBENCH_PRIMING") else 2):
    body = {"model": "m", "stream": True, "instructions": instructions,
            "tools": [{"type": "function", "name": "exec_command"}], "input": conversation}
    request = urllib.request.Request(
        os.environ["WARM_MODEL_URL"] + "/v1/responses", json.dumps(body).encode(),
        {"content-type": "application/json", "authorization": "Bearer sk-warm"})
    text = urllib.request.urlopen(request, timeout=30).read().decode()
    done = [json.loads(line[6:]) for line in text.splitlines()
            if line.startswith("data: ") and "response.completed" in line]
    usage = done[-1]["response"]["usage"]
    totals["input"] += usage["input_tokens"]
    totals["cached_input"] += usage["input_tokens_details"]["cached_tokens"]
    totals["output"] += usage["output_tokens"]
    conversation.append({"type": "function_call_output", "call_id": f"c{step}", "output": "ok"})
pathlib.Path("notes.txt").write_text("goodbye\\n")
json.dump(totals, open(os.environ["AGENTBENCH_USAGE_FILE"], "w"))
"""

ARMS = '[arm.warm]\nguidance = ["warm.md"]\nprefix_cache = "warm"\n'
SCRIPT = {"prefix_cache": "key", "usage": {"input": 1000, "output": 10}, "turns": []}


def lay_out(pytester: pytest.Pytester) -> None:
    task = pytester.path / "tasks" / "greet"
    (task / "workspace").mkdir(parents=True)
    (task / "expected").mkdir()
    (task / "task.toml").write_text('prompt = "Change hello to goodbye in notes.txt."\n')
    (task / "workspace" / "notes.txt").write_text("hello\n")
    (task / "expected" / "notes.txt").write_text("goodbye\n")
    (pytester.path / "agent.py").write_text(AGENT)
    (pytester.path / "warm.md").write_text("Work carefully.\n")
    (pytester.path / "arms.toml").write_text(ARMS)


@DISTS
def test_a_warm_arm_is_primed_apart_and_shows_a_higher_cache_hit_share(
    pytester: pytest.Pytester,
    agentbench_model_server: ServerFactory,
    monkeypatch: pytest.MonkeyPatch,
    dist: list[str],
) -> None:
    server = agentbench_model_server(SCRIPT)
    monkeypatch.setenv("WARM_MODEL_URL", server.base_url)
    lay_out(pytester)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--agent=command",
        "--agent-cmd=python agent.py",
        "--agent-opt=env=WARM_MODEL_URL",
        "--sandbox=tmp",
        "--tasks=tasks",
        "--arms=arms.toml",
        "--agentbench-json=report.json",
        *dist,
        timeout=120,
    )
    result.assert_outcomes(passed=2)
    report = json.loads((pytester.path / "report.json").read_text())
    by_arm = {o.get("arm"): o for o in report["observations"]}
    vanilla, warm = by_arm["vanilla"], by_arm["warm"]
    # Five requests reached the server: two per trial, one for the priming run ...
    assert len(server.requests) == 5
    # ... and the trial's counts hold its own two only; the priming run's are apart.
    assert vanilla["tokens"]["input"] == warm["tokens"]["input"] == 2000
    assert "priming" not in vanilla
    priming = warm["priming"]
    assert priming["cause"] is None and priming["requests"] is None  # unmetered
    assert priming["tokens"]["input"] == 1000
    served = [r.usage["cached_input"] for r in server.requests if r.usage]
    assert sum(served) == (
        priming["tokens"]["cached_input"]
        + vanilla["tokens"]["cached_input"]
        + warm["tokens"]["cached_input"]
    )
    # The warm trial's first request found its whole prompt cached by the priming run.
    assert warm["tokens"]["cached_input"] >= 1000 > vanilla["tokens"]["cached_input"]
    rows = {row["arm"]: row["cache"] for row in report["arms"]["arms"]}
    assert rows["vanilla"]["prefix_cache"] == "cold" and rows["vanilla"]["priming"] is None
    assert rows["warm"]["prefix_cache"] == "warm"
    assert rows["warm"]["priming"]["runs"] == 1
    assert rows["warm"]["priming"]["tokens"] is None  # unmetered: no wire figures
    assert rows["warm"]["reported_cache_hit_share"] > rows["vanilla"]["reported_cache_hit_share"]
    assert rows["warm"]["reported_trials"] == rows["vanilla"]["reported_trials"] == 1
    result.stdout.fnmatch_lines(
        [
            "cache vanilla (cold): cache-hit share *% as reported over 1 trial",
            "cache warm (warm): cache-hit share *% as reported over 1 trial; "
            "priming apart: 1 run, unknown requests, input unknown, cost unknown",
        ]
    )
    # The run read back: its Markdown report has the same lines.
    script = str(Path(sys.executable).parent / "agentbench")
    markdown = subprocess.run(
        [script, "report", report["run"]["run_dir"], "--format", "md"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "- cache warm (warm): cache-hit share" in markdown


def test_a_priming_run_that_fails_is_an_infrastructure_failure_of_the_trial(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The priming run's scratch sandbox cannot start (made to fail in a conftest): the warm
    trial is an infrastructure failure, never the agent's, and the cold trial is scored."""
    lay_out(pytester)
    pytester.makeconftest(
        """
import pytest
from pytest_agentbench.sandbox.base import InfrastructureError
import pytest_agentbench.trial.priming as priming

real = priming.start_sandbox

def failing(provider, task, trial_id):
    if trial_id.endswith("-prime"):
        raise InfrastructureError("sandbox_start", "scratch workspace refused")
    return real(provider, task, trial_id)

priming.start_sandbox = failing
"""
    )
    monkeypatch.setenv("WARM_MODEL_URL", "http://127.0.0.1:9")
    (pytester.path / "agent.py").write_text(
        "import pathlib\npathlib.Path('notes.txt').write_text('goodbye\\n')\n"
    )
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--agent=command",
        "--agent-cmd=python agent.py",
        "--sandbox=tmp",
        "--tasks=tasks",
        "--arms=arms.toml",
        "--agentbench-json=report.json",
        timeout=120,
    )
    report: dict[str, Any] = json.loads((pytester.path / "report.json").read_text())
    by_arm = {o.get("arm"): o for o in report["observations"]}
    assert by_arm["vanilla"]["status"] == "scored"
    warm = by_arm["warm"]
    assert warm["status"] == "infrastructure" and warm["cause"] == "sandbox_start"
    assert warm["priming"]["cause"] == "sandbox_start"
    assert warm["rounds"] == []  # the trial itself never ran
    result.stdout.fnmatch_lines(["*not scored: infrastructure failures 1 (sandbox_start 1)"])


def _trial(cached: int | None, given: int, primed: dict[str, Any] | None = None) -> dict[str, Any]:
    tokens = {"input": given, "cached_input": cached, "output": 1, "reasoning": None}
    metered = {"requests": 2, "statuses": {"200": 2}, "tokens": tokens, "side_requests": 0,
               "side_tokens": None, "faults": 0, "retried_after_fault": None}  # fmt: skip
    observation = {"status": "scored", "tokens": tokens, "metered": metered}
    if primed is not None:
        observation["priming"] = primed
    return observation


def test_cache_figures_count_the_trials_they_pool_and_keep_priming_apart() -> None:
    from pytest_agentbench.scoring.metering import cache_figures

    primed = {"cause": None, "wall_s": 1.0, "tokens": None, "cost_usd": None, "requests": 2,
              "metered": _trial(0, 500)["metered"]}  # fmt: skip
    figures = cache_figures([_trial(900, 1000, primed), _trial(None, 1000, primed)])
    assert figures["prefix_cache"] == "warm"
    # The trial with unknown cached tokens is left out, and said to be.
    assert figures["cache_hit_share"] == 0.9 and figures["metered_trials"] == 1
    assert figures["priming"]["runs"] == 2 and figures["priming"]["requests"] == 4
    assert figures["priming"]["tokens"]["input"] == 1000  # apart: not in the share above
    assert figures["priming"]["cost_usd"] is None  # unknown, never 0
    cold = cache_figures([_trial(0, 1000)])
    assert (cold["prefix_cache"], cold["cache_hit_share"], cold["priming"]) == ("cold", 0.0, None)
    assert cache_figures([])["cache_hit_share"] is None
