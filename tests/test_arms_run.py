"""Arms in a pytest run: items per arm, interleaved and seeded order, per-arm draws and
identities, node ids given back, the arms block in the report, and compare --arms."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from inline_payloads import payloads_of
from tiny_tasks import make_tasks

from conftest import without_measured_times

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples"
SCRIPT = Path(sys.executable).parent / "agentbench"
MOCK = ["-p", "no:randomly", "-p", "no:cacheprovider", "--agent=mock", "--sandbox=tmp"]
DISTS = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
ARMS = ("vanilla", "core", "seed-wrong", "seed-correct")


def suite(pytester: pytest.Pytester, count: int = 4) -> list[str]:
    """Tiny tasks, the first two with seed fields (the anchor arms skip the others), and a
    copy of the example arms file with its guidance and skill."""
    tasks = make_tasks(pytester.path, count)
    for seeded in ("t00", "t01")[:count]:
        toml = tasks / seeded / "task.toml"
        toml.write_text(
            toml.read_text()
            + 'seed_wrong = "The word is already final."\n'
            + 'seed_correct = "Replace draft with final in notes.txt."\n'
        )
    shutil.copytree(EXAMPLE, pytester.path / "examples")
    return [f"--tasks={tasks.name}", "--arms=examples/arms.toml"]


TRIAL = re.compile(r"(t\d\d::[\w-]+::r\d)")


def trial_names(result: pytest.RunResult, outcomes: str = "PASSED|FAILED|SKIPPED") -> set[str]:
    """The trials a -v run reported (serial: 'ID PASSED', xdist: 'PASSED ID')."""
    return {
        match.group(1)
        for line in result.outlines
        if re.search(rf"\b({outcomes})\b", line) and (match := TRIAL.search(line))
    }


def comparable(path: Path) -> dict[str, Any]:
    """The JSON report without what differs between two runs of the same trials."""
    report = json.loads(path.read_text())
    volatile = {"started_at", "finished_at", "run_id", "run_dir", "wall_s_host", "workers"}
    report["run"] = {k: v for k, v in report["run"].items() if k not in volatile}
    report["run"]["settings"].pop("json_path")
    for observation in report["observations"]:
        observation.pop("trial_id", None)
    report["observations"].sort(key=lambda o: (o.get("arm"), o["task"], o["repeat"]))
    return without_measured_times(report)


@DISTS
def test_every_task_runs_under_every_arm(pytester: pytest.Pytester, dist: list[str]) -> None:
    args = suite(pytester)
    result = pytester.runpytest_subprocess(*MOCK, *args, *dist, "--repeats=3", "-v")
    expected = {f"t0{t}::{arm}::r{k}" for t in range(4) for arm in ARMS for k in range(3)}
    assert trial_names(result) == expected
    assert result.outlines.count("agentbench: 4 tasks, 48 trials, 48 agent sessions") == 1
    # The anchor arms skip the two tasks without seed fields: 2 arms x 2 tasks x 3 repeats.
    assert result.parseoutcomes()["skipped"] == 12
    result.stdout.fnmatch_lines(
        [
            "arms (each arm its own configuration; figures above pool them):",
            "vanilla * 12 *",
            "core - vanilla * first *McNemar p=*",
            "anchor seed-wrong (seed_wrong): solve rate * on 2 tasks, anchor resistance *",
            "delivery: none (the agent runs no model; only prompt prefixes reach it)",
        ]
    )


def test_xdist_gives_the_same_json_as_a_serial_run(pytester: pytest.Pytester) -> None:
    args = suite(pytester)
    pytester.runpytest_subprocess(*MOCK, *args, "--repeats=3", "--agentbench-json=serial.json")
    pytester.runpytest_subprocess(
        *MOCK, *args, "--repeats=3", "-n", "2", "--agentbench-json=xdist.json"
    )
    serial, xdist = (
        comparable(pytester.path / "serial.json"),
        comparable(pytester.path / "xdist.json"),
    )
    assert serial["arms"]["paired"]  # there is something to compare
    assert serial == xdist


def test_trials_interleave_arms_in_an_order_the_seed_decides(pytester: pytest.Pytester) -> None:
    args = suite(pytester, 1)

    def order(seed: str) -> list[str]:
        result = pytester.runpytest_subprocess(
            *MOCK, *args, "--repeats=3", "--collect-only", "-q", f"--agentbench-seed={seed}"
        )
        return [line.split("t00::")[1] for line in result.outlines if "t00::" in line]

    first = order("1")
    assert first == order("1")
    # Each repeat runs every arm before the next repeat starts.
    assert [name.split("::r")[1] for name in first] == [str(k) for k in range(3) for _ in ARMS]
    assert any(order(str(seed)) != first for seed in range(2, 6))


def test_a_plain_run_has_no_arm_anywhere(pytester: pytest.Pytester) -> None:
    make_tasks(pytester.path, 2)
    result = pytester.runpytest_subprocess(*MOCK, "--tasks=tiny-tasks", "--agentbench-json=r.json")
    result.stdout.no_fnmatch_line("*arms*")
    report = json.loads((pytester.path / "r.json").read_text())
    assert "arms" not in report
    assert all("arm" not in o for o in report["observations"])
    assert {o["trial_id"].split("/")[1] for o in report["observations"]} == {"t00", "t01"}


def test_the_mock_takes_a_pass_chance_per_arm(pytester: pytest.Pytester) -> None:
    args = suite(pytester)
    opts = ["--agent-opt", "pass_prob=0", "--agent-opt", "pass_prob.arm.core=1"]
    pytester.runpytest_subprocess(*MOCK, *args, *opts, "--repeats=2", "--agentbench-json=r.json")
    report = json.loads((pytester.path / "r.json").read_text())
    rows = {row["arm"]: row for row in report["arms"]["arms"]}
    assert rows["core"]["first_exact"] == 1.0 and rows["vanilla"]["first_exact"] == 0.0
    (core,) = [p for p in report["arms"]["paired"] if p["arm"] == "core"]
    assert core["first_exact"]["trials"]["treatment_only"] == 8


def test_vanilla_draws_and_pools_as_a_plain_run(pytester: pytest.Pytester) -> None:
    args = suite(pytester)
    pytester.runpytest_subprocess(*MOCK, *args, "--repeats=2", "--agentbench-dir=with-arms")
    pytester.runpytest_subprocess(
        *MOCK, args[0], "--repeats=2", "--agentbench-dir=plain", "--agentbench-json=plain.json"
    )
    run = json.loads((pytester.path / "with-arms" / "run.json").read_text())
    plain = json.loads((pytester.path / "plain" / "run.json").read_text())
    assert run["arms"]["vanilla"] == plain["identity"]
    assert run["arms"]["core"]["arm"] == "core" and run["arms"]["core"]["arm_identity"]
    lines = (pytester.path / "with-arms" / "observations.jsonl").read_text().splitlines()
    vanilla = {
        (o["task"], o["repeat"]): o["first_exact"]
        for o in map(json.loads, lines)
        if o["arm"] == "vanilla"
    }
    report = json.loads((pytester.path / "plain.json").read_text())
    assert vanilla == {(o["task"], o["repeat"]): o["first_exact"] for o in report["observations"]}
    trial_dirs = {p.name for p in (pytester.path / "with-arms" / "trials").iterdir()}
    assert not trial_dirs or all("__" in name for name in trial_dirs)  # ARM::TASK, made safe


def test_a_trials_node_id_with_its_arm_reruns_that_trial(pytester: pytest.Pytester) -> None:
    args = suite(pytester)
    result = pytester.runpytest_subprocess(*MOCK, *args, "tiny-tasks/t02::core::r1", "-v")
    assert sum(result.parseoutcomes().get(k, 0) for k in ("passed", "failed")) == 1
    assert trial_names(result) == {"t02::core::r1"}
    every_arm = pytester.runpytest_subprocess(*MOCK, *args, "tiny-tasks/t02::r0", "-v")
    assert trial_names(every_arm) == {f"t02::{arm}::r0" for arm in ARMS}
    wrong = pytester.runpytest_subprocess(*MOCK, *args, "tiny-tasks/t02::nosuch::r1")
    wrong.stderr.fnmatch_lines(["*t02::nosuch::r1: no such trial; *<arm>::r<k> with <arm> one of*"])
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR


def test_k_selects_an_arm_and_lf_reruns_its_failures(pytester: pytest.Pytester) -> None:
    args = suite(pytester)
    cached = ["-p", "no:randomly", "--agent=mock", "--sandbox=tmp", *args, "--repeats=2", "-v"]
    first = pytester.runpytest_subprocess(*cached, "-k", "core")
    ran = trial_names(first, "PASSED|FAILED")
    assert ran and {name.split("::")[1] for name in ran} == {"core"}
    failed = trial_names(first, "FAILED")
    assert failed  # the mock passes 70%: 8 trials
    again = pytester.runpytest_subprocess(*cached, "--lf")
    assert trial_names(again, "PASSED|FAILED") == failed


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (
            '[arm.core]\nguidanc = ["a.md"]\n',
            "arms.toml:2: unknown key `guidanc` in [arm.core] (did you mean `guidance`?); an arm",
        ),
        (
            '[arm.core]\nguidance = ["missing.md"]\n',
            "[arm.core] guidance: *missing.md does not exist",
        ),
    ],
)
def test_a_bad_arms_file_is_a_usage_error_before_any_trial(
    pytester: pytest.Pytester, body: str, words: str
) -> None:
    make_tasks(pytester.path, 1)
    (pytester.path / "arms.toml").write_text(body)
    result = pytester.runpytest_subprocess(*MOCK, "--tasks=tiny-tasks", "--arms=arms.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --arms: *{words.replace('[', '[[]')}*"])
    assert not (pytester.path / ".agentbench").exists()  # no trial started


def agentbench(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_a_run_with_arms_reads_back_per_arm_and_compares_two_of_them(
    pytester: pytest.Pytester,
) -> None:
    args = suite(pytester)
    opts = ["--agent-opt", "pass_prob=0.2", "--agent-opt", "pass_prob.arm.core=1"]
    pytester.runpytest_subprocess(
        *MOCK, *args, *opts, "--repeats=2", "--agentbench-dir=run", "--agentbench-json=r.json"
    )
    merged = agentbench(pytester.path, "report", "run", "--format", "json")
    assert merged.returncode == 0, merged.stderr
    document = json.loads(merged.stdout)
    names = [c["run"]["name"] for c in document["configurations"]]
    assert names == list(ARMS)
    # Read back, the arms pair as the run paired them (same bootstrap seed, 0).
    ran = json.loads((pytester.path / "r.json").read_text())["arms"]
    assert document["arms"]["paired"] == ran["paired"]
    assert document["arms"]["anchors"] == ran["anchors"]
    markdown = agentbench(pytester.path, "report", "run", "--format", "md").stdout
    assert "## Arms: each treatment paired with vanilla" in markdown
    assert "| core " in markdown.split("## Arms")[1]
    html = agentbench(pytester.path, "report", "run", "--format", "html").stdout
    shown = payloads_of(html)["index"]["arms"]
    assert shown == document["arms"] and {p["arm"] for p in shown["paired"]} == set(ARMS[1:])
    gates = pytester.path / "gates.toml"
    gates.write_text(
        '[[gate]]\nname = "no worse"\nmetric = "first_exact"\nbound = "point"\nmargin = 0\n'
    )
    better = agentbench(
        pytester.path, "compare", "run", "--arms", "vanilla,core", "--gates", str(gates)
    )
    assert better.returncode == 0, better.stdout + better.stderr
    assert "base      vanilla" in better.stdout and "candidate core" in better.stdout
    worse = agentbench(
        pytester.path, "compare", "run", "--arms", "core,vanilla", "--gates", str(gates)
    )
    assert worse.returncode == 1, worse.stdout + worse.stderr
    bad = agentbench(pytester.path, "compare", "run", "--arms", "vanilla")
    assert bad.returncode == 2 and "give one run directory and two of its arms" in bad.stderr


def test_the_summary_with_arms_fits_one_screen(pytester: pytest.Pytester) -> None:
    """The arms block shares the summary's line budget: the task table is what gets cut."""
    from pytest_agentbench.report.terminal import SCREEN_LINES

    args = suite(pytester, 30)
    result = pytester.runpytest_subprocess(*MOCK, *args, "--repeats=2")
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if re.match(r"=+ agentbench =+$", line))
    summary = lines[start:]
    assert len(summary) <= SCREEN_LINES, summary
    assert any(line.startswith("... ") for line in summary)  # the task table was cut
    assert "seed-correct - vanilla" in "\n".join(summary)


def test_a_resumed_run_with_arms_reuses_each_arms_trials(pytester: pytest.Pytester) -> None:
    args = suite(pytester, 2)
    first = pytester.runpytest_subprocess(*MOCK, *args, "--repeats=2", "--agentbench-dir=run")
    again = pytester.runpytest_subprocess(
        *MOCK, *args, "--repeats=2", "--agentbench-resume=run", "--agentbench-json=r.json"
    )
    assert again.parseoutcomes() == first.parseoutcomes()  # the same trials, not re-run
    report = json.loads((pytester.path / "r.json").read_text())
    reused = [o for o in report["observations"] if o.get("reused")]
    assert len(reused) == len(report["observations"]) == len(ARMS) * 2 * 2  # both tasks seeded
    assert {o["arm"] for o in reused} == set(ARMS)


def test_resume_refuses_an_arm_that_now_delivers_other_bytes(pytester: pytest.Pytester) -> None:
    """A reused trial must have seen what the arm delivers now: one changed byte of its
    guidance stops the resume before any trial, naming the arm."""
    args = suite(pytester, 2)
    pytester.runpytest_subprocess(*MOCK, *args, "--agentbench-dir=run")
    guidance = pytester.path / "examples" / "arms" / "core.md"
    guidance.write_text(guidance.read_text() + "\n")
    again = pytester.runpytest_subprocess(*MOCK, *args, "--agentbench-resume=run")
    assert again.ret == pytest.ExitCode.USAGE_ERROR
    again.stderr.fnmatch_lines(["ERROR: --agentbench-resume *: arm core delivers other bytes*"])
    assert not re.search(r"\d+ (passed|failed)", again.stdout.str())  # no trial ran


def test_shards_of_a_run_with_arms_merge_per_arm(pytester: pytest.Pytester) -> None:
    args = suite(pytester)
    for index in (1, 2):
        pytester.runpytest_subprocess(
            *MOCK,
            *args,
            "--repeats=2",
            f"--agentbench-shard={index}/2",
            f"--agentbench-dir=s{index}",
        )
    merged = agentbench(pytester.path, "merge", "s1", "s2", "-o", "merged.json")
    assert merged.returncode == 0, merged.stderr
    document = json.loads((pytester.path / "merged.json").read_text())
    trials = {c["run"]["name"]: len(c["observations"]) for c in document["configurations"]}
    # Every task in one shard or the other, all its arms with it: 4 tasks (2 seeded) x 2 repeats.
    assert trials == {"vanilla": 8, "core": 8, "seed-wrong": 4, "seed-correct": 4}
    assert document["arms"]["paired"][0]["first_exact"]["trials"]["paired_trials"] == 8


def test_trials_a_budget_left_unstarted_keep_their_arm(pytester: pytest.Pytester) -> None:
    args = suite(pytester, 2)
    pytester.runpytest_subprocess(
        *MOCK, *args, "--agentbench-budget-tokens=1", "--agentbench-json=r.json"
    )
    observations = json.loads((pytester.path / "r.json").read_text())["observations"]
    unstarted = [o for o in observations if o["status"] == "budget_exhausted"]
    assert unstarted and all(o["arm"] in ARMS for o in observations)
    assert len({(o["arm"], o["task"], o["repeat"]) for o in observations}) == len(observations)
