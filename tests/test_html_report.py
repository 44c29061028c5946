"""The HTML report is the viewer with its data inlined: what it carries of a run whose agent
reported no usage (the real browser tests are in test_view_browser.py)."""

from __future__ import annotations

import pytest
from inline_payloads import payloads_of
from tiny_tasks import make_tasks

from pytest_agentbench.cli import main

BASE = ["-p", "no:randomly", "--agent=mock", "--sandbox=tmp", "--tasks=tiny-tasks", "--repeats=3"]


def test_unreported_usage_shows_unknown_never_zero(pytester: pytest.Pytester) -> None:
    make_tasks(pytester.path, 2)
    pytester.runpytest_subprocess(*BASE, "--agent-opt", "usage=off", "--agentbench-dir=run")
    for form in ("html", "md"):
        out = pytester.path / f"report.{form}"
        assert main(["report", str(pytester.path / "run"), "--format", form, "-o", str(out)]) == 0
        text = out.read_text()
        assert "unknown" in text
    markdown = (pytester.path / "report.md").read_text().splitlines()
    leaderboard = markdown[markdown.index("## Leaderboard") + 2 :]
    table = leaderboard[: leaderboard.index("")]
    assert table[0].startswith("| rank ") and set(table[1]) == {"|", "-"}
    cells = [len(line.replace("\\|", "").split("|")) for line in table]
    assert len(table) == 3 and len(set(cells)) == 1  # header, rule, one row, aligned columns
    assert len({len(line) for line in table}) == 1
    payloads = payloads_of((pytester.path / "report.html").read_text())
    summary = payloads["index"]["configurations"][0]["summary"]
    assert summary["tokens"]["known"] == 0 and summary["tokens"]["missing"] == 6
    assert summary["tokens"]["median"] is None and summary["cost_usd"]["median"] is None
    columns = payloads["trials/c0"]
    assert columns["tokens"] == [None] * 6 and columns["cost_usd"] == [None] * 6
