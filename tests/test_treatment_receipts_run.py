"""A treatment mismatch through `pytest --arms`: the trial ends as a harness error (an
infrastructure failure, never scored as the agent's) and keeps its treatment.json.

The agent is `--agent=claude` with a stand-in binary: its discovery answers are Claude Code
2.1.332's real ones (tests/fixtures/events/claude/discovery.jsonl) with the skills dialog
listing what the trial's home holds, plus a planted skill (FAKE_PLANT) or less a hidden one
(FAKE_HIDE), or another version (FAKE_VERSION); its coding run edits the file and prints a
result event.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.view.trial_detail import trial as trial_page

DISTS = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
FIXTURE = Path(__file__).parent / "fixtures" / "events" / "claude" / "discovery.jsonl"

FAKE = f"""#!{sys.executable}
import json, os, pathlib, sys
if "--version" in sys.argv:
    print("2.1.332 (Claude Code)")
    sys.exit(0)
config = pathlib.Path(os.environ["CLAUDE_CONFIG_DIR"])
if "--input-format" in sys.argv:
    for request in sys.stdin:  # answered once the last request is in, as the CLI does
        if "agentbench-discovery-end" in request:
            break
    names = sorted(p.name for p in (config / "skills").glob("*") if p.is_dir())
    names = [n for n in names + [os.environ.get("FAKE_PLANT", "")] if n]
    names = [n for n in names if n != os.environ.get("FAKE_HIDE")]
    for line in open({str(FIXTURE)!r}):
        answer = json.loads(line)
        response = answer["response"]
        if response["request_id"] == "initialize" and os.environ.get("FAKE_VERSION"):
            response["response"]["claude_code_version"] = os.environ["FAKE_VERSION"]
        if response["request_id"] == "get_skills_dialog":
            response["response"]["skills"] = [
                {{"name": n, "source": "user", "state": "on"}} for n in names
            ]
        if response["request_id"] == "get_memory_dialog":
            memory = config / "CLAUDE.md"
            response["response"]["files"] = [
                {{"kind": "user", "path": str(memory), "exists": memory.exists()}}
            ]
        print(json.dumps(answer))
    sys.exit(0)
pathlib.Path("notes.txt").write_text("goodbye\\n")
print(json.dumps({{"type": "system", "subtype": "init", "session_id": "s1",
                  "claude_code_version": "2.1.332", "skills": []}}))
print(json.dumps({{"type": "result", "subtype": "success", "session_id": "s1", "num_turns": 1,
                  "result": "done", "usage": {{"input_tokens": 1, "output_tokens": 1,
                  "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}}}))
"""


def lay_out(pytester: pytest.Pytester) -> None:
    task = pytester.path / "tasks" / "greet"
    (task / "workspace").mkdir(parents=True)
    (task / "expected").mkdir()
    (task / "task.toml").write_text('prompt = "Change hello to goodbye in notes.txt."\n')
    (task / "workspace" / "notes.txt").write_text("hello\n")
    (task / "expected" / "notes.txt").write_text("goodbye\n")
    skill = pytester.path / "skills" / "checker"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: checker\ndescription: Check twice.\n---\n")
    (pytester.path / "core.md").write_text("Work carefully.\n")
    (pytester.path / "arms.toml").write_text(
        '[arm.core]\nguidance = ["core.md"]\nskills = ["skills/checker"]\n'
    )
    fake = pytester.path / "claude"
    fake.write_text(FAKE)
    fake.chmod(0o755)


def run(pytester: pytest.Pytester, dist: list[str]) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--agent=claude",
        f"--agent-opt=bin={pytester.path / 'claude'}",
        "--agent-opt=env=FAKE_PLANT,FAKE_HIDE,FAKE_VERSION",
        "--agentbench-meter=off",
        "--sandbox=tmp",
        "--tasks=tasks",
        "--arms=arms.toml",
        "--agentbench-json=report.json",
        *dist,
        timeout=120,
    )


def receipts(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    found = sorted(pytester.path.glob(".agentbench/runs/*/trials/*/treatment.json"))
    return {path.parent.name.split("__")[0]: json.loads(path.read_text()) for path in found}


def observations(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    report = json.loads((pytester.path / "report.json").read_text())
    return {o["arm"]: o for o in report["observations"]}


@DISTS
def test_an_undeclared_skill_in_the_home_ends_every_trial_as_a_harness_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, dist: list[str]
) -> None:
    lay_out(pytester)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-fake-key-for-the-stand-in")
    monkeypatch.setenv("FAKE_PLANT", "stowaway")
    result = run(pytester, dist)
    by_arm = observations(pytester)
    for arm in ("vanilla", "core"):
        assert by_arm[arm]["status"] == "infrastructure"
        assert by_arm[arm]["cause"] == "treatment_mismatch"
        assert by_arm[arm]["rounds"] == []  # no coding run started
    kept = receipts(pytester)
    assert sorted(kept) == ["core", "vanilla"]
    assert kept["vanilla"]["components"]["skills"] == {
        "expected": [],
        "seen": ["stowaway"],
        "status": "mismatch",
    }
    assert kept["core"]["problems"] == ["skills: seen but not declared ['stowaway']"]
    assert kept["core"]["components"]["guidance"]["status"] == "verified"
    result.stdout.fnmatch_lines(["*not scored: infrastructure failures 2 (treatment_mismatch 2)"])


def test_a_declared_skill_the_cli_does_not_see_ends_that_trial_alone(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    lay_out(pytester)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-fake-key-for-the-stand-in")
    monkeypatch.setenv("FAKE_HIDE", "checker")
    run(pytester, [])
    by_arm = observations(pytester)
    assert by_arm["vanilla"]["status"] == "scored" and by_arm["vanilla"]["final_exact"]
    assert by_arm["core"]["status"] == "infrastructure"
    assert by_arm["core"]["cause"] == "treatment_mismatch"
    kept = receipts(pytester)
    assert kept["vanilla"]["status"] == "verified"
    assert kept["vanilla"]["after"]["delivered_unchanged"] is True
    assert kept["core"]["problems"] == ["skills: declared but not seen ['checker']"]
    folder = next(pytester.path.glob(".agentbench/runs/*/trials/core__*"))
    page = trial_page("k", 0, by_arm["core"], folder, {})  # the viewer's trial page shows it
    assert json.loads(page["treatment"]) == kept["core"]


def test_a_discovery_that_reports_another_version_than_the_cli_is_a_mismatch(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    lay_out(pytester)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-fake-key-for-the-stand-in")
    monkeypatch.setenv("FAKE_VERSION", "2.1.331")
    run(pytester, [])
    assert {o["cause"] for o in observations(pytester).values()} == {"treatment_mismatch"}
    problems = receipts(pytester)["vanilla"]["problems"]
    assert problems == ["discovery reports CLI 2.1.331, --version said '2.1.332 (Claude Code)'"]
