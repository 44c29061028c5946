"""What a run prints: one line per failed trial, the summary last and on one screen, the plan
and the warning under -n and -q, telling progress letters, and counts in good grammar."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.fs.wording import plural
from pytest_agentbench.report.letters import LEGEND
from pytest_agentbench.report.reporter import FAILED_LISTED
from pytest_agentbench.report.terminal import SCREEN_LINES, Section, fit
from tests.conftest import simple_tasks

DISTS = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
SEPARATOR = re.compile(r"^=+ (?P<title>.+?) =+$")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sandbox=tmp", *args)


def sections(lines: list[str]) -> list[str]:
    """The titles of pytest's ==== separator lines, in order."""
    return [m["title"] for m in map(SEPARATOR.match, lines) if m]


def block(lines: list[str]) -> list[str]:
    """The lines from the agentbench separator to the end."""
    starts = [i for i, line in enumerate(lines) if SEPARATOR.match(line) and " agentbench " in line]
    assert len(starts) == 1, lines[-60:]
    return lines[starts[0] :]


@DISTS
def test_a_failed_trial_is_one_line_by_default(pytester, dist, monkeypatch) -> None:
    monkeypatch.setenv("CI", "true")  # on CI pytest prints a plain-text failure in full
    tasks = simple_tasks(pytester.path / "tasks", 2)
    result = run(pytester, "--agent=nop", f"--tasks={tasks}", "--repeats=2", *dist)
    result.assert_outcomes(failed=4)
    failed = [line for line in result.outlines if line.startswith("FAILED ")]
    assert sorted(failed) == [
        f"FAILED tasks/t{task:02d}::r{repeat} - differing: a.txt"
        for task in range(2)
        for repeat in range(2)
    ]
    assert "FAILURES" not in sections(result.outlines)
    assert not any(line.startswith(("--- expected/", "+++ workspace/")) for line in result.outlines)


@DISTS
def test_the_readme_command_fits_a_ci_log(pytester, dist, monkeypatch) -> None:
    """`pytest --agent=mock --repeats=5` on the bundled suite, 80 columns wide."""
    monkeypatch.setenv("COLUMNS", "80")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--agent=mock", "--repeats=5", *dist
    )
    lines = result.outlines
    assert len(lines) <= 150, len(lines)
    assert sum(max(1, -(-len(line) // 80)) for line in lines) <= 150  # wrapped at 80 columns
    assert sections(lines)[-3:] == ["short test summary info", "agentbench", sections(lines)[-1]]
    failed = int(re.search(r"(\d+) failed", lines[-1])[1])
    assert failed > FAILED_LISTED
    assert sum(line.startswith("FAILED ") for line in lines) == FAILED_LISTED
    result.stdout.fnmatch_lines(
        [f"... {failed - FAILED_LISTED} more failed trials not listed: pytest -rf lists every one*"]
    )


@DISTS
@pytest.mark.parametrize("detail", [[], ["-rf"], ["-rA"], ["-v"], ["--tb=short"]])
def test_the_failed_list_is_bounded_unless_asked_for(pytester, dist, detail) -> None:
    tasks = simple_tasks(pytester.path / "tasks", FAILED_LISTED + 5)
    result = run(pytester, "--agent=nop", f"--tasks={tasks}", *detail, *dist)
    result.assert_outcomes(failed=FAILED_LISTED + 5)
    failed = [line.split()[1] for line in result.outlines if line.startswith("FAILED ")]
    unlisted = [line for line in result.outlines if "not listed" in line]
    if detail:
        assert sorted(failed) == [f"tasks/t{index:02d}::r0" for index in range(FAILED_LISTED + 5)]
        assert not unlisted
    else:
        assert len(failed) == FAILED_LISTED
        assert unlisted == [
            "... 5 more failed trials not listed: pytest -rf lists every one, pytest --lf runs "
            "them again"
        ]
    again = run(pytester, "--agent=nop", f"--tasks={tasks}", failed[-1])  # pasteable as is
    again.assert_outcomes(failed=1)


@DISTS
def test_a_partial_run_says_so_and_shows_only_its_tasks(pytester, dist) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 30)
    result = run(pytester, "--agent=mock", f"--tasks={tasks}", "-k", "t01 or t02", *dist)
    lines = block(result.outlines)
    assert lines.count("2 of 30 declared tasks selected; score counts the declared set") == 1
    assert [line.split()[0] for line in lines if re.match(r"t\d\d ", line)] == ["t01", "t02"]
    assert not any(line.startswith("... ") for line in lines)


@DISTS
def test_a_selection_of_nothing_is_one_line(pytester, dist) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 30)
    result = run(pytester, "--agent=mock", f"--tasks={tasks}", "-k", "nomatch", *dist)
    ours = [
        line for line in result.outlines if line.startswith("agentbench") or "agentbench" in line
    ]
    assert ours[-1] == "agentbench: no trial selected of 30 declared tasks; nothing ran"
    assert "agentbench" not in sections(result.outlines)
    assert not any(line.startswith(("agentbench: 0 tasks", "task ")) for line in result.outlines)


@DISTS
@pytest.mark.parametrize("detail", ["-v", "--tb=long", "--tb=short"])
def test_diffs_come_with_verbose_or_an_explicit_traceback_style(pytester, dist, detail) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 1)
    result = run(pytester, "--agent=nop", f"--tasks={tasks}", detail, *dist)
    result.assert_outcomes(failed=1)
    assert "FAILURES" in sections(result.outlines)
    result.stdout.fnmatch_lines(["differing: a.txt", "--- expected/a.txt", "+++ workspace/a.txt"])


def test_a_harness_error_keeps_its_traceback(pytester) -> None:
    """Only outcomes lose their story: a trial that broke the harness still shows where."""
    tasks = simple_tasks(pytester.path / "tasks", 1)
    pytester.makeconftest(
        "def pytest_agentbench_grade(task, workspace):\n    raise RuntimeError('grader broke')\n"
    )
    result = run(pytester, "--agent=oracle", f"--tasks={tasks}", f"--rootdir={pytester.path}")
    result.assert_outcomes(failed=1)
    assert "FAILURES" in sections(result.outlines)
    result.stdout.fnmatch_lines(["*raise RuntimeError('grader broke')*"])


@DISTS
def test_the_summary_is_last_and_fits_one_screen(pytester, dist) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 80)
    result = run(pytester, "--agent=mock", f"--tasks={tasks}", "--repeats=3", *dist)
    lines = result.outlines
    summary = block(lines)
    assert len(summary) <= SCREEN_LINES, summary
    assert sections(lines)[-3:] == ["short test summary info", "agentbench", sections(lines)[-1]]
    assert re.search(r"\d+ failed, \d+ passed", lines[-1])
    cut = [line for line in summary if line.startswith("... ")]
    assert len(cut) == 1 and re.match(r"\.\.\. \d+ more tasks not shown", cut[0])
    assert any(line.startswith("the full table: pytest -v, agentbench report ") for line in summary)
    shown = [line.split()[0] for line in summary if re.match(r"t\d\d ", line)]
    report = json.loads(
        (next((pytester.path / ".agentbench" / "runs").iterdir()) / "run.json").read_text()
    )
    assert report["tasks"].keys() >= set(shown)


def test_the_shown_rows_are_the_tasks_that_failed_most(pytester) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 80)
    result = run(
        pytester,
        "--agent=mock",
        f"--tasks={tasks}",
        "--repeats=3",
        "--agentbench-json=r.json",
    )
    report = json.loads((pytester.path / "r.json").read_text())
    rates = sorted(task["first_exact"] for task in report["tasks"])
    rows = [line.split() for line in block(result.outlines) if re.match(r"t\d\d ", line)]
    assert [float(row[2].rstrip("%")) / 100 for row in rows] == pytest.approx(
        rates[: len(rows)], abs=1e-3
    )


def test_verbose_shows_the_whole_table(pytester) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 80)
    result = run(pytester, "--agent=mock", f"--tasks={tasks}", "-v")
    rows = [line.split()[0] for line in block(result.outlines) if re.match(r"t\d\d ", line)]
    assert rows == [f"t{index:02d}" for index in range(80)]


@DISTS
def test_the_plan_is_printed_under_xdist_too(pytester, dist) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 3)
    result = run(pytester, "--agent=oracle", f"--tasks={tasks}", "--repeats=2", *dist)
    assert result.outlines.count("agentbench: 3 tasks, 6 trials, 6 agent sessions") == 1


@DISTS
@pytest.mark.parametrize("quiet", [[], ["-q"], ["-qq"], ["--no-header"]])
def test_the_isolation_warning_is_printed_once_even_quiet(pytester, dist, quiet) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 1)
    result = run(pytester, "--agent=oracle", f"--tasks={tasks}", *quiet, *dist)
    warnings = [line for line in result.outlines if "the agent is NOT isolated" in line]
    assert len(warnings) == 1, result.outlines


def progress_letters(lines: list[str]) -> str:
    """Every progress letter, in order (the letters follow the path, or fill a line alone)."""
    letters = ""
    for line in lines:
        found = re.match(r"^(?:tasks/\S+ )?([.+FRsE!]+)\s+\[\s*\d+%\]$", line)
        if found:
            letters += found[1]
    return letters


@DISTS
def test_letters_tell_first_exact_recovered_and_not_exact_apart(pytester, dist) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 6)
    result = run(
        pytester,
        "--agent=mock",
        f"--tasks={tasks}",
        "--repeats=4",
        "--oracle-recoveries=1",
        "--agent-opt=pass_prob=0.5",
        "--agent-opt=fix_prob=0.5",
        "--agentbench-json=r.json",
        *dist,
    )
    observations = json.loads((pytester.path / "r.json").read_text())["observations"]
    expected = ["." if o["first_exact"] else "+" if o["final_exact"] else "F" for o in observations]
    letters = progress_letters(result.outlines)
    assert sorted(letters) == sorted(expected)
    assert {".", "+", "F"} <= set(letters)
    if not dist:  # serially the letters follow the trials in order
        assert letters == "".join(expected)
    assert result.outlines.count(LEGEND) == 1


@DISTS
def test_reused_and_skipped_trials_have_their_own_letters(pytester, dist) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 3)
    common = ["--agent=mock", f"--tasks={tasks}", "--repeats=2"]
    run(pytester, *common, "--agentbench-dir=first")
    pytester.makeconftest(
        "import pytest\n"
        "def pytest_collection_modifyitems(items):\n"
        "    items[0].add_marker(pytest.mark.skip(reason='not this one'))\n"
    )
    result = run(
        pytester, *common, "--agentbench-resume=first", f"--rootdir={pytester.path}", *dist
    )
    assert sorted(progress_letters(result.outlines)) == sorted("sRRRRR")
    assert result.outlines.count(LEGEND) == 1


def test_verbose_words_replace_the_letters_yet_the_legend_stays(pytester) -> None:
    """The words replace the progress letters; the task table keeps its letters."""
    tasks = simple_tasks(pytester.path / "tasks", 1)
    result = run(
        pytester,
        "--agent=mock",
        f"--tasks={tasks}",
        "--oracle-recoveries=1",
        "--agent-opt=pass_prob=0",
        "--agent-opt=fix_prob=1",
        "-v",
    )
    result.stdout.fnmatch_lines(["tasks/t00::r0 PASSED (after recovery/retry)*"])
    assert result.outlines.count(LEGEND) == 1


def test_counts_of_one_are_singular(pytester) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 1)
    result = run(
        pytester, "--agent=mock", f"--tasks={tasks}", "--repeats=1", "--agent-opt=usage=off"
    )
    lines = block(result.outlines)
    assert "agentbench: 1 task, 1 trial, 1 agent session" in result.outlines
    assert "1 trial scored" in lines
    assert any("coverage 100.0% (1 of 1 declared task)  score" in line for line in lines)
    assert "tokens: unknown (1 trial unreported)" in lines
    assert any(line.startswith("flip rate unknown (0 tasks)") for line in lines)
    assert not any(re.search(r"\b1 (trials|tasks)\b", line) for line in result.outlines)


@pytest.mark.parametrize(
    ("count", "noun", "nouns", "text"),
    [
        (0, "trial", None, "0 trials"),
        (1, "trial", None, "1 trial"),
        (2, "trial", None, "2 trials"),
        (1, "entry", "entries", "1 entry"),
        (3, "entry", "entries", "3 entries"),
    ],
)
def test_plural(count, noun, nouns, text) -> None:
    assert plural(count, noun, nouns) == text


def test_mock_usage_is_labelled_simulated_in_terminal_and_html(pytester) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 2)
    result = run(pytester, "--agent=mock", f"--tasks={tasks}", "--agentbench-dir=run")
    lines = block(result.outlines)
    for label in ("tokens (simulated): ", "cost USD (simulated): ", "wall s (simulated): "):
        assert any(line.startswith(label) for line in lines), lines
    html = pytester.path / "r.html"
    from pytest_agentbench.cli import main

    assert main(["report", str(pytester.path / "run"), "--format", "html", "-o", str(html)]) == 0
    from inline_payloads import payloads_of

    configuration = payloads_of(html.read_text())["index"]["configurations"][0]
    assert configuration["simulated"] == ["cost_usd", "tokens", "wall_s"]


@pytest.mark.parametrize("args", [["--agent=oracle"], ["--agent=mock", "--agent-opt=usage=off"]])
def test_measured_figures_are_not_labelled_simulated(pytester, args) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 1)
    result = run(pytester, *args, f"--tasks={tasks}")
    assert not any(
        "(simulated)" in line or line.startswith("simulated:") for line in result.outlines
    )


@given(
    heads=st.lists(st.integers(0, 5), min_size=1, max_size=4),
    rows=st.lists(st.integers(0, 200), min_size=1, max_size=4),
    budget=st.integers(0, 80),
)
def test_fit_keeps_every_head_and_stays_within_a_budget_that_holds_them(heads, rows, budget):
    sections = [
        Section(
            head=[f"h{index}.{n}" for n in range(head)],
            rows=[f"r{index}.{n}" for n in range(count)],
            more=lambda hidden, shown: [f"... {hidden} more", "see elsewhere"],
        )
        for index, (head, count) in enumerate(zip(heads, rows, strict=False))
    ]
    lines = fit(sections, budget)
    assert all(line in lines for section in sections for line in section.head)
    cut = sum(1 for line in lines if line.startswith("... "))
    fixed = sum(len(section.head) + (2 if section.rows else 0) for section in sections)
    if budget >= fixed:
        assert len(lines) <= budget
    shown = sum(1 for line in lines if line.startswith("r"))
    hidden = sum(int(line.split()[1]) for line in lines if line.startswith("... "))
    assert shown + hidden == sum(len(section.rows) for section in sections)
    assert cut <= len(sections)
    assert fit(sections, None) == [line for s in sections for line in (*s.head, *s.rows)]
