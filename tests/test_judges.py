"""Blind pairwise judges: the strict verdict parser, the statistics and the tally, and
`agentbench judge` / `review` end to end against the scripted model server's judge personas
on a mock run with two arms (docs/judges.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.cli import main
from pytest_agentbench.judge.stats import (
    bradley_terry,
    cohen_kappa,
    wilson_interval,
)
from pytest_agentbench.judge.tally import tally
from pytest_agentbench.judge.verdict import VerdictError, parse_review, parse_verdict
from pytest_agentbench.testing.model_server import ScriptedModelServer

FINDING = {"change": "B", "severity": "major", "file": "a.py", "line": 3, "text": "off by one"}


# ---------------------------------------------------------------------------------------------
# The verdict parser


def test_a_bare_or_fenced_object_parses() -> None:
    bare = json.dumps({"verdict": "B", "findings": [FINDING]})
    assert parse_verdict(bare).verdict == "B"
    fenced = f"Here it is:\n```json\n{bare}\n```\n"
    verdict = parse_verdict(fenced)
    assert verdict.findings[0].to_dict() == FINDING


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        ("I prefer A.", "no JSON object"),
        ('{"verdict": "A", "findings": []', "not valid JSON"),
        ('{"verdict": "C", "findings": []}', "verdict: 'C'"),
        ('{"verdict": "a", "findings": []}', "verdict: 'a'"),
        ('{"verdict": "A", "findings": [], "why": "x"}', "unknown field(s) why"),
        ('{"verdict": "A"}', "missing field(s) findings"),
        ('{"verdict": "A", "findings": {}}', "findings: expected a list"),
        (
            json.dumps({"verdict": "A", "findings": [{**FINDING, "change": "C"}]}),
            "findings[0].change",
        ),
        (json.dumps({"verdict": "A", "findings": [{**FINDING, "severity": "low"}]}), ".severity"),
        (json.dumps({"verdict": "A", "findings": [{**FINDING, "line": 0}]}), "findings[0].line"),
        (
            json.dumps({"verdict": "A", "findings": [{**FINDING, "extra": 1}]}),
            "findings[0]: unknown",
        ),
        ("[1, 2]", "the answer is a JSON array, expected an object"),
        ('```json\n"A"\n```', "the answer is a JSON string, expected an object"),
    ],
)
def test_a_bad_answer_is_an_error_naming_the_field(answer: str, named: str) -> None:
    with pytest.raises(VerdictError) as raised:
        parse_verdict(answer)
    assert named in str(raised.value)


def test_a_review_has_no_change_field() -> None:
    plain = {k: v for k, v in FINDING.items() if k != "change"}
    assert parse_review(json.dumps({"findings": [plain]}))[0].to_dict() == plain
    with pytest.raises(VerdictError, match="unknown field"):
        parse_review(json.dumps({"findings": [FINDING]}))


# ---------------------------------------------------------------------------------------------
# Statistics


@given(st.integers(0, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_holds_the_rate_inside_zero_one(case: tuple[int, int]) -> None:
    successes, n = case
    interval = wilson_interval(successes, n)
    if n == 0:
        assert interval is None
        return
    assert interval is not None
    low, high = interval
    assert 0.0 <= low <= successes / n <= high <= 1.0
    mirrored = wilson_interval(n - successes, n)
    assert mirrored is not None
    assert mirrored[0] == pytest.approx(1 - high) and mirrored[1] == pytest.approx(1 - low)


def test_wilson_interval_known_value() -> None:
    # 8 of 10 at 90%, z = 1.644854, z^2 = 2.705543, 1 + z^2/n = 1.270554:
    # centre (0.8 + z^2/20) / 1.270554 = 0.935277 / 1.270554 = 0.736119;
    # half z * sqrt(0.8 * 0.2 / 10 + z^2/400) / 1.270554 = 1.644854 * 0.150877 / 1.270554
    # = 0.195326; so [0.540793, 0.931445].
    assert wilson_interval(8, 10) == pytest.approx([0.540793, 0.931445], abs=1e-5)
    # 2 of 2 (the shorter-diff judge's tally below): (1 + z^2/4 - z * sqrt(z^2/16)) / (1 + z^2/2)
    # = (1.676386 - 0.676386) / 2.352772 = 0.425029; the upper bound is exactly 1.
    assert wilson_interval(2, 2) == pytest.approx([0.425029, 1.0], abs=1e-5)
    assert wilson_interval(0, 7)[0] == 0.0 and wilson_interval(7, 7)[1] == 1.0  # type: ignore[index]


def test_bradley_terry_recovers_a_known_example() -> None:
    # 0 beats 1 twice as often as it loses; 1 beats 2 likewise; 0 beats 2 four to one:
    # exactly the strengths 4 : 2 : 1.
    games = [(0, 1, 1.0)] * 20 + [(0, 1, 0.0)] * 10
    games += [(1, 2, 1.0)] * 20 + [(1, 2, 0.0)] * 10
    games += [(0, 2, 1.0)] * 24 + [(0, 2, 0.0)] * 6
    strengths = bradley_terry(games, 3)
    assert strengths == pytest.approx([4 / 7, 2 / 7, 1 / 7], abs=1e-6)
    assert bradley_terry([(0, 1, 1.0)], 3)[2] is None


def test_cohen_kappa_hand_case() -> None:
    # 10 items; 7 equal. Rater one: A x5, B x5; rater two: A x6, B x4.
    pairs = [("A", "A")] * 4 + [("A", "B")] + [("B", "A")] * 2 + [("B", "B")] * 3
    # p_o = 0.7; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = 0.4
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([("A", "A")] * 3) is None
    assert cohen_kappa([]) is None


def record(judge: str, task: str, first: str, winner: str, **extra: Any) -> dict[str, Any]:
    verdict = "tie" if winner == "tie" else "A" if winner == first else "B"
    return {
        "judge": judge,
        "kind": "trial",
        "task": task,
        "repeat": 0,
        "gold": None,
        "sides": ["x", "y"],
        "first": first,
        "verdict": verdict,
        "winner": winner,
        "findings": [],
        "error": None,
        "input_tokens": 10,
        "output_tokens": 2,
        "cost_usd": None,
        **extra,
    }


@given(st.lists(st.tuples(st.sampled_from(["x", "y", "tie"]), st.sampled_from(["x", "y", "tie"]))))
def test_tally_invariants(votes: list[tuple[str, str]]) -> None:
    records = []
    for n, (one, two) in enumerate(votes):
        records += [record("j", f"t{n}", "x", one), record("j", f"t{n}", "y", two)]
    selection = {
        "sides": ["x", "y"],
        "judges": ["j"],
        "keys": [str(k) for k in range(len(records))],
    }
    judge = tally(selection, records)["judges"][0]
    x, y = judge["sides"]["x"], judge["sides"]["y"]
    assert x["wins"] == y["losses"] and x["losses"] == y["wins"] and x["ties"] == y["ties"]
    assert x["pairs"] == len(votes)
    consistent = sum(1 for one, two in votes if one == two)
    assert judge["position"]["consistent"] == consistent
    if x["win_rate"] is not None:
        assert x["interval"][0] <= x["win_rate"] <= x["interval"][1]
    assert judge["usage"]["tokens"] == 12 * len(records)
    assert judge["usage"]["cost_usd"] is None if records else judge["usage"]["cost_usd"] == 0


# ---------------------------------------------------------------------------------------------
# End to end: a mock run with two arms (tests/conftest.py's arm_run), judged through the
# scripted server


def judge(server: ScriptedModelServer, run_dir: Path, *extra: str) -> int:
    args = ["judge", str(run_dir), "--pair", "vanilla,core", "--judge-model", "judge-1"]
    args += ["--judge-api", "openai", "--judge-base-url", server.openai_base_url, *extra]
    return main(args)


def test_shorter_diff_judge_picks_the_shorter_arm_and_caches(
    arm_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedModelServer({"judge": "shorter", "turns": []}) as server:
        assert judge(server, arm_run, "--format", "json") == 0
        block = json.loads(capsys.readouterr().out)
        asked = len(server.requests)
        assert asked == 4  # 2 tasks x 1 repeat x both orders
        prompts = [m["content"] for r in server.requests for m in r.body["messages"]]
        for name in ("vanilla", "core", "mock", str(arm_run)):
            assert not any(name in p for p in prompts), name
        assert judge(server, arm_run) == 0
        assert len(server.requests) == asked  # every answer from judgements.jsonl
    result = block["judges"][0]
    vanilla = result["sides"]["vanilla"]
    assert (vanilla["wins"], vanilla["losses"], vanilla["ties"]) == (2, 0, 0)
    assert vanilla["win_rate"] == 1.0
    assert vanilla["interval"] == pytest.approx([0.425029, 1.0], abs=1e-5)  # as worked above
    assert vanilla["p_value"] == pytest.approx(0.5)  # sign test: 2 of 2, two-sided
    core = result["sides"]["core"]
    assert (core["wins"], core["losses"], core["win_rate"]) == (0, 2, 0.0)
    assert core["interval"] == pytest.approx([0.0, 1 - 0.425029], abs=1e-5)
    assert result["position"]["consistency"] == 1.0
    assert result["findings"]["core"]["minor"] == 4 and result["findings"]["vanilla"]["minor"] == 0
    assert result["usage"]["calls"] == 4 and result["usage"]["cost_usd"] is None
    assert result["flags"] == []
    out = capsys.readouterr().out
    assert "vanilla 2-0-0 win rate 1.00 [0.43, 1.00], core 0-2-0 win rate 0.00 [0.00, 0.57]" in out
    assert "consistency 1.00 of 2" in out and "FLAG" not in out
    assert main(["report", str(arm_run), "--format", "md"]) == 0
    assert "## Judges (vanilla vs core; either pairs)" in capsys.readouterr().out


def test_always_a_judge_is_inconsistent_and_flagged_and_gold_scores_it(
    arm_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedModelServer({"judge": "first", "turns": []}) as server:
        assert judge(server, arm_run, "--gold", "--format", "json") == 0
        assert len(server.requests) == 8  # 2 pairs and 2 gold pairs, both orders
    result = json.loads(capsys.readouterr().out)["judges"][0]
    assert result["position"]["consistency"] == 0.0
    assert result["sides"]["vanilla"]["ties"] == 2  # each order's vote cancels the other
    assert result["gold"]["accuracy"] == 0.5
    assert any("position consistency 0.00" in f for f in result["flags"])
    assert any("gold accuracy 0.50 < 0.8" in f for f in result["flags"])
    assert main(["report", str(arm_run)]) == 0
    assert "FLAG openai:judge-1: position consistency 0.00" in capsys.readouterr().out


def test_gold_with_a_shorter_diff_judge_scores_the_reference(
    arm_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedModelServer({"judge": "shorter", "turns": []}) as server:
        assert judge(server, arm_run, "--gold", "--format", "json") == 0
    result = json.loads(capsys.readouterr().out)["judges"][0]
    gold = result["gold"]
    assert gold == {"pairs": 2, "answers": 4, "correct": 4, "accuracy": 1.0, "threshold": 0.8}
    assert result["flags"] == []  # at or above the threshold: not flagged


def test_gold_threshold_is_the_flag_line(arm_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedModelServer({"judge": "first", "turns": []}) as server:
        assert judge(server, arm_run, "--gold", "--gold-threshold", "0.5") == 0
    out = capsys.readouterr().out
    assert "gold accuracy 0.50 of 4" in out
    assert "gold accuracy 0.50 <" not in out  # 0.5 is not below 0.5
    assert "FLAG openai:judge-1: position consistency 0.00" in out


def every_text(body: Any) -> list[str]:
    if isinstance(body, str):
        return [body]
    if isinstance(body, dict):
        return [t for v in body.values() for t in every_text(v)]
    if isinstance(body, list):
        return [t for v in body for t in every_text(v)]
    return []


def test_the_judge_never_reads_arm_agent_model_or_path(
    arm_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A change that names its arm, the other arm, the agent, its model and where it ran: the
    # words reach the judge redacted, and nothing else of the run reaches it either.
    trial = arm_run / "trials" / "vanilla__t00-r0"
    sandbox = "/tmp/agentbench-owner-1/agentbench-t00-vanilla-r0-k2j4/workspace"
    (trial / "change.patch").write_text(
        (trial / "change.patch").read_text()
        + "--- /dev/null\n+++ b/where.txt\n@@ -0,0 +1,3 @@\n"
        + "+written by Vanilla with mock (mock-1), unlike core\n"
        + f"+kept in {arm_run}/trials/vanilla__t00-r0 and {arm_run.resolve()}\n"
        + f"+ran in {sandbox}/notes.txt\n"
    )
    with ScriptedModelServer({"judge": "first", "turns": []}) as server:
        assert judge(server, arm_run, "--gold") == 0
        assert len(server.requests) == 8  # 2 pairs and 2 gold pairs, both orders
        texts = [t for r in server.requests for t in every_text(r.body["messages"])]
    seen = "\n".join(texts)
    for word in ("vanilla", "core", "mock", str(arm_run.parent), "agentbench-t00"):
        assert word.lower() not in seen.lower(), word
    assert "+written by [redacted] with [redacted] ([redacted]), unlike [redacted]" in seen
    assert "+kept in [redacted]/trials/[redacted] and [redacted]" in seen
    assert "+ran in [redacted]/workspace/notes.txt" in seen


def test_budget_stops_asking(arm_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = {"judge": "shorter", "turns": [], "usage": {"input": 900, "output": 100}}
    with ScriptedModelServer(script) as server:
        assert judge(server, arm_run, "--budget-tokens", "1500") == 1
        assert len(server.requests) == 2  # 1000 tokens each: the second reaches the bound
        assert "--budget-tokens 1500 reached" in capsys.readouterr().err
        assert judge(server, arm_run, "--budget-usd", "1") == 1  # no prices: cost unknown
        assert len(server.requests) == 3
        assert "reported no cost" in capsys.readouterr().err


def test_anthropic_review_lists_findings(arm_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trial = next(p.name for p in (arm_run / "trials").iterdir() if p.name.startswith("core"))
    with ScriptedModelServer({"judge": "first", "turns": []}) as server:
        code = main(
            [
                *("review", str(arm_run), trial, "--judge-model", "claude-x"),
                *("--judge-api", "anthropic", "--judge-base-url", server.base_url),
            ]
        )
        # the "first" persona answers a pairwise verdict: not a review, so a judge error
        assert code == 1
        assert server.requests[0].path == "/v1/messages"
    assert "unknown field(s) verdict" in capsys.readouterr().err
    lines = (arm_run / "reviews.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["error"]["kind"] == "answer"


@pytest.mark.parametrize("missing", ["cli", "bin", "credential"])
def test_judge_agent_without_its_cli_or_credential_is_a_usage_error(
    arm_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    missing: str,
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    if missing == "cli":  # not installed anywhere the harness looks
        monkeypatch.setenv("AGENTBENCH_CLAUDE_BIN", "")
        monkeypatch.setenv("AGENTBENCH_CLI_CACHE", str(tmp_path / "no-cache"))
        monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
        said = "--judge-agent claude: claude CLI not found: set AGENTBENCH_CLAUDE_BIN, or install"
    elif missing == "bin":  # pointed at a file that is not there
        monkeypatch.setenv("AGENTBENCH_CLAUDE_BIN", str(tmp_path / "claude"))
        said = f"--judge-agent claude: {tmp_path / 'claude'} (from AGENTBENCH_CLAUDE_BIN) is no"
    else:  # installed, but no key to call the model with
        binary = tmp_path / "claude"
        binary.write_text("#!/bin/sh\nexit 0\n")
        binary.chmod(0o755)
        monkeypatch.setenv("AGENTBENCH_CLAUDE_BIN", str(binary))
        said = "--judge-agent claude: no credentials: set ANTHROPIC_API_KEY or"
    args = ["judge", str(arm_run), "--pair", "vanilla,core", "--judge-agent", "claude"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert not (arm_run / "judgements.jsonl").exists()  # refused before the first question


def test_unknown_arm_is_named(arm_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", str(arm_run), "--pair", "vanilla,nope", "--judge-model", "m"]) == 2
    assert "has no arm nope; its arms: core, vanilla" in capsys.readouterr().err
