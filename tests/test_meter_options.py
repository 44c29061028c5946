"""The meter's options: off changes nothing, bad values are usage errors before any trial."""

from __future__ import annotations

import json

import pytest
from tiny_tasks import TINY_RUN, slow_suite

from pytest_agentbench.testing.clis import find_cli


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agentbench-meter=maybe"], "*--agentbench-meter 'maybe': choose one of off, on, auto*"),
        (["--agentbench-faults=1:500"], "*act through the meter: add --agentbench-meter=on*"),
        (
            ["--agentbench-meter=on", "--agentbench-faults=every:2"],
            "*'every:2' is neither N:STATUS nor every:K:STATUS*",
        ),
    ],
)
def test_bad_meter_options_stop_the_run_before_any_trial(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    slow_suite(pytester)
    result = pytester.runpytest_subprocess(*TINY_RUN, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_without_the_option_the_report_has_no_meter_fields(pytester: pytest.Pytester) -> None:
    slow_suite(pytester)
    pytester.runpytest_subprocess(*TINY_RUN, "--agentbench-json=report.json")
    report = json.loads((pytester.path / "report.json").read_text())
    assert "metering" not in report
    assert not any("metered" in obs for obs in report["observations"])
    assert {"meter", "faults", "meter_log"}.isdisjoint(report["run"]["settings"])
    assert "faults" not in report["run"]["identity"]


def test_meter_on_for_a_cli_without_a_key_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = find_cli("claude")
    if binary is None:
        pytest.skip("the pinned Claude Code is not installed (.ci/install-agent-clis.sh)")
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", "an-account-login")
    slow_suite(pytester)
    result = pytester.runpytest_subprocess(
        "--agent=claude", f"--agent-opt=bin={binary}", "--tasks=tiny-tasks",
        "--agentbench-meter=on",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot be metered here: set ANTHROPIC_API_KEY*"])
