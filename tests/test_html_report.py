"""The HTML report renders in real headless Chromium: no errors, sorting works, a screenshot."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tiny_tasks import make_tasks

from pytest_agentbench.cli import main

BASE = ["-p", "no:randomly", "--agent=mock", "--sandbox=tmp", "--tasks=tiny-tasks", "--repeats=3"]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

CAPTURE = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
var __consoleError = console.error;
console.error = function () { window.__errors.push([].join.call(arguments, " "));
  __consoleError.apply(console, arguments); };
</script>"""

PROBE = """<script>
(function () {
  function column(table, index) {
    return [].map.call(table.tBodies[0].rows, function (r) { return r.cells[index].dataset.sort; });
  }
  var board = document.getElementById("leaderboard");
  var score = board.tHead.rows[0].cells[2];
  score.click();
  var ascending = column(board, 2);
  score.click();
  var descending = column(board, 2);
  var tasks = document.getElementById("tasks");
  tasks.tHead.rows[0].cells[0].click();
  tasks.tHead.rows[0].cells[0].click();
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({errors: window.__errors, ascending: ascending,
    descending: descending, tasks: column(tasks, 0),
    cells: document.querySelectorAll(".cell[title]").length,
    external: document.querySelectorAll("[src],link[href]").length});
  document.body.appendChild(out);
})();
</script>"""


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--enable-logging=stderr",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.real
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_html_report_renders_sorts_and_screenshots(pytester: pytest.Pytester) -> None:
    make_tasks(pytester.path, 12)
    for prob in ("0.9", "0.3", "0.6"):
        pytester.runpytest_subprocess(
            *BASE, "--agent-opt", f"pass_prob={prob}", f"--agentbench-dir=p{prob}"
        )
    merged, page = pytester.path / "merged.json", pytester.path / "report.html"
    runs = [str(pytester.path / f"p{p}") for p in ("0.9", "0.3", "0.6")]
    assert main(["merge", *runs, "-o", str(merged)]) == 0
    assert main(["report", str(merged), "--format", "html", "-o", str(page)]) == 0
    html = page.read_text()
    assert not re.search(r"(src|href)=['\"]?https?:", html), "the report must not load anything"
    probe = pytester.path / "probe.html"
    probe.write_text(
        html.replace("<head>", "<head>" + CAPTURE).replace("</body>", PROBE + "</body>")
    )

    dom = chromium(pytester.path / "profile-dom", "--dump-dom", probe.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stdout[-2000:]
    result = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert result["errors"] == []
    assert "Uncaught" not in dom.stderr
    scores = [float(v) for v in result["ascending"]]
    assert scores == sorted(scores) and len(scores) == 3
    assert [float(v) for v in result["descending"]] == sorted(scores, reverse=True)
    assert result["tasks"] == sorted(result["tasks"], reverse=True)
    assert result["cells"] == 3 * 12 * 3 and result["external"] == 0

    screenshot = pytester.path / "report.png"
    shot = chromium(
        pytester.path / "profile-shot",
        f"--screenshot={screenshot}",
        "--window-size=1280,1600",
        page.as_uri(),
    )
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 20_000


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
    html = (pytester.path / "report.html").read_text()
    assert '<td data-sort="">unknown</td>' in html  # tokens, cost: no number, sorted last
    assert "6 unknown" in html  # every trial's tokens counted as unknown in the plot
