"""Whole runs through pytest: items, outcomes, the report, serial and under xdist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import simple_tasks, without_measured_times, write_task

DISTS = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def load(path: Path) -> dict:
    return json.loads(path.read_text())


RUN_FACTS = ("rounds", "trial_id")  # timings, and ids that name the run that made them


def strip_run_facts(observations: list[dict]) -> list[dict]:
    """The observations without timings measured on the machine (the mock's are drawn)."""
    stripped = [{k: v for k, v in o.items() if k not in RUN_FACTS} for o in observations]
    return without_measured_times({"observations": stripped})["observations"]


@DISTS
def test_mock_metrics_are_identical_serial_and_under_xdist(pytester, dist) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 6)
    common = ["--agent=mock", "--repeats=4", f"--tasks={tasks}", "--agentbench-seed=11"]
    run(pytester, *common, "--agentbench-json=serial.json")
    result = run(pytester, *common, *dist, "--agentbench-json=other.json")
    serial, other = load(pytester.path / "serial.json"), load(pytester.path / "other.json")
    assert serial["summary"] == other["summary"]
    assert serial["tasks"] == other["tasks"]
    assert serial["observations"] and len(serial["observations"]) == len(other["observations"])
    assert strip_run_facts(serial["observations"]) == strip_run_facts(other["observations"])
    passed = sum(o["final_exact"] for o in other["observations"])
    result.assert_outcomes(passed=passed, failed=24 - passed)
    assert 0 < passed < 24


def test_json_report_has_the_documented_keys(pytester) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 3)
    run(pytester, "--agent=mock", "--repeats=3", f"--tasks={tasks}", "--agentbench-json=r.json")
    report = load(pytester.path / "r.json")
    assert report["schema_version"] == 1
    assert {
        "agent",
        "model",
        "reasoning",
        "repeats",
        "oracle_recoveries",
        "retry_failures",
        "sandbox",
        "harness_version",
        "seed",
        "config_hash",
        "task_set_hash",
        "started_at",
        "finished_at",
    } <= set(report["run"])
    assert {
        "tasks_declared",
        "tasks_observed",
        "trials",
        "first_exact",
        "final_exact",
        "eof_normalized",
        "quality",
        "coverage",
        "score",
        "flip_rate",
        "flaky_tasks",
        "k",
        "pass_at_k",
        "pass_hat_k",
        "first_exact_ci",
        "pooled_first_exact",
        "pooled_first_exact_ci",
        "final_eof_normalized",
        "cost_per_success",
        "similarity",
        "tokens",
        "output_tokens",
        "cost_usd",
        "wall_s",
    } <= set(report["summary"])
    for stat in ("tokens", "output_tokens", "cost_usd", "wall_s"):
        figures = {"median", "mean", "total", "cv", "cv_tasks", "known", "missing"}
        assert set(report["summary"][stat]) == figures
    task = report["tasks"][0]
    assert {
        "id",
        "category",
        "tags",
        "fixture_hash",
        "trials",
        "outcomes",
        "final_outcomes",
        "first_exact",
        "final_exact",
        "eof_normalized",
        "flip_rate",
        "pass_at_k",
        "pass_hat_k",
    } <= set(task)
    assert len(task["outcomes"]) == 3 and set(task["outcomes"]) <= {"P", "F"}
    obs = report["observations"][0]
    assert {
        "task",
        "repeat",
        "status",
        "attempts",
        "first_exact",
        "final_exact",
        "eof_normalized",
        "rounds",
        "tokens",
        "cost_usd",
        "wall_s",
    } <= set(obs)
    assert {
        "attempt",
        "round",
        "exit_code",
        "timed_out",
        "wall_s",
        "exact",
        "eof_normalized",
        "differing",
        "missing",
        "unexpected",
        "invalid",
    } <= set(obs["rounds"][0])
    assert [(o["task"], o["repeat"]) for o in report["observations"]] == sorted(
        (o["task"], o["repeat"]) for o in report["observations"]
    )


def test_unreported_usage_is_null_not_zero(pytester) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 2)
    run(
        pytester,
        "--agent=mock",
        "--agent-opt=usage=off",
        f"--tasks={tasks}",
        "--agentbench-json=r.json",
    )
    report = load(pytester.path / "r.json")
    assert all(o["tokens"] is None and o["cost_usd"] is None for o in report["observations"])
    assert report["summary"]["tokens"]["known"] == 0
    assert report["summary"]["tokens"]["missing"] == 2
    assert report["summary"]["cost_usd"]["mean"] is None


@DISTS
def test_a_broken_task_errors_alone_and_names_the_problem(pytester, dist) -> None:
    root = simple_tasks(pytester.path / "tasks", 2)
    write_task(root, "bad-toml", {"a": "x"}, {"a": "y"}).joinpath("task.toml").write_text("=")
    write_task(root, "no-prompt", {"a": "x"}, {"a": "y"}).joinpath("task.toml").write_text(
        "timeout = 5\n"
    )
    write_task(root, "unknown-key", {"a": "x"}, {"a": "y"}, toml_extra="colour = 'red'\n")
    write_task(root, "two-graders", {"a": "x"}, {"a": "y"}, verify="#!/bin/sh\nexit 0\n")
    write_task(root, "no-grader", {"a": "x"})
    linked = write_task(root, "symlinked", {"a": "x"}, {"a": "y"})
    (linked / "workspace" / "link").symlink_to("a")
    result = run(pytester, "--agent=oracle", f"--tasks={root}", *dist)
    result.assert_outcomes(passed=2, errors=6)
    result.stdout.fnmatch_lines_random(
        [
            "*bad-toml?task.toml: invalid TOML*",
            "*no-prompt?task.toml: missing required field 'prompt'*",
            "*unknown-key?task.toml:2: unknown key `colour`; allowed keys are category, *",
            "*two-graders: has both expected/ and verify*",
            "*no-grader: has neither expected/ nor verify*",
            "*symlinked?workspace?link: is a symlink*",
        ]
    )
    # One line each, as agentbench validate prints them: no traceback into the plugin.
    result.stdout.no_fnmatch_line("*pytest_agentbench?trial?fixtures.py*")
    result.stdout.no_fnmatch_line("*_ _ _ _*")
    result.stdout.fnmatch_lines(  # under xdist the errors come in any order: one at a time
        [
            "*_ ERROR at setup of no-prompt r0 _*",
            "*no-prompt?task.toml: missing required field 'prompt' (add prompt = *)",
        ]
    )
    result.stdout.fnmatch_lines(["*_ ERROR at setup of symlinked r0 _*"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--agent=nosuch"],
            "*--agent 'nosuch': unknown agent; available: claude, codex, command, mock, nop, "
            "opencode, oracle*",
        ),
        (["--agent=mock", "--oracle-recoveries=1", "--retry-failures=1"], "*cannot be combined*"),
        (["--agent=mock", "--repeats=0"], "*--repeats: expected an integer >= 1, got 0*"),
        (["--agent=mock", "--agent-opt=seed"], "*expected KEY=VALUE*"),
        (["--agent=command"], "*--agent=command needs --agent-cmd*"),
        (["--agent=mock", "--agent-opt=pass_prob=2"], "*expected a probability in [[]0, 1]*"),
        (["--agent=mock", "--tasks=builtin:nosuch"], "*unknown built-in suite*"),
        (["--agent=mock", "--agent-timeout=-1"], "*--agent-timeout: expected a number*"),
    ],
)
def test_usage_errors_say_what_is_allowed(pytester, args, message) -> None:
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_pytest_selection_options_work_on_tasks(pytester) -> None:
    root = pytester.path / "tasks"
    write_task(root, "replace-one", {"a": "1\n"}, {"a": "2\n"}, toml_extra='tags = ["edit"]\n')
    write_task(
        root,
        "create-file",
        {"a": "1\n"},
        {"a": "1\n", "b": "2\n"},
        toml_extra='tags = ["create"]\n',
    )
    result = pytester.runpytest_subprocess(
        "--agent=oracle", "--repeats=2", f"--tasks={root}", "--collect-only", "-q"
    )
    result.stdout.fnmatch_lines(
        [
            "tasks/create-file::r0",
            "tasks/create-file::r1",
            "tasks/replace-one::r0",
            "tasks/replace-one::r1",
        ]
    )
    run(pytester, "--agent=oracle", f"--tasks={root}", "-k", "replace").assert_outcomes(passed=1)
    run(pytester, "--agent=oracle", f"--tasks={root}", "-m", "create").assert_outcomes(passed=1)
    result = run(
        pytester,
        "--agent=oracle",
        f"--tasks={root}",
        "--junitxml=j.xml",
        "--deselect",
        "tasks/create-file::r0",
    )
    result.assert_outcomes(passed=1, deselected=1)
    assert 'name="r0"' in (pytester.path / "j.xml").read_text()


def test_last_failed_reruns_only_the_failures(pytester) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 4)
    first = pytester.runpytest_subprocess(
        "--agent=mock", "--repeats=3", f"--tasks={tasks}", "--agent-opt=seed=5"
    )
    failed = first.parseoutcomes()["failed"]
    again = pytester.runpytest_subprocess(
        "--agent=mock", "--repeats=3", f"--tasks={tasks}", "--agent-opt=seed=5", "--lf"
    )
    outcomes = again.parseoutcomes()  # the other trials are not run (dropped or deselected)
    assert outcomes["failed"] == failed and "passed" not in outcomes


def test_exitfirst_stops_after_the_first_failed_trial(pytester) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 3)
    run(pytester, "--agent=nop", f"--tasks={tasks}", "-x").assert_outcomes(failed=1)


def test_oracle_recoveries_continue_with_feedback_and_stop_at_first_exact(pytester) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 3)
    result = run(
        pytester,
        "--agent=mock",
        "--agent-opt=pass_prob=0",
        "--agent-opt=fix_prob=1",
        "--oracle-recoveries=2",
        f"--tasks={tasks}",
        "--agentbench-json=r.json",
    )
    result.assert_outcomes(passed=3)
    report = load(pytester.path / "r.json")
    assert report["summary"]["first_exact"] == 0 and report["summary"]["final_exact"] == 1
    assert report["summary"]["quality"] == 0.25
    for obs in report["observations"]:
        assert [r["round"] for r in obs["rounds"]] == [0, 1]
        assert [r["exact"] for r in obs["rounds"]] == [False, True]


def test_feedback_names_paths_but_never_expected_content(pytester, monkeypatch) -> None:
    root = pytester.path / "tasks"
    write_task(root, "secret", {"a.txt": "old\n"}, {"a.txt": "EXPECTED-CONTENT\n"})
    out = pytester.path / "feedback"
    out.mkdir()
    monkeypatch.setenv("OUT", str(out))
    command = (
        'if [ "$AGENTBENCH_ROUND" != 0 ]; then cp "$AGENTBENCH_FEEDBACK_FILE" '
        '"$OUT/round-$AGENTBENCH_ROUND.txt"; fi; echo wrong > a.txt'
    )
    run(
        pytester,
        "--agent=command",
        f"--agent-cmd={command}",
        "--agent-opt=env=OUT",
        "--sandbox=tmp",  # the command writes the feedback outside its workspace
        "--oracle-recoveries=2",
        f"--tasks={root}",
        "--agentbench-json=r.json",
    )
    feedback = (out / "round-1.txt").read_text()
    assert feedback.startswith("The check of your result failed.")
    assert "EXPECTED-CONTENT" not in feedback
    data = json.loads(feedback.split("\n\n", 1)[1])
    assert data["differing"] == ["a.txt"] and data["passed"] is False
    assert (out / "round-2.txt").exists()
    assert len(load(pytester.path / "r.json")["observations"][0]["rounds"]) == 3


def test_retry_failures_start_fresh_attempts(pytester) -> None:
    root = pytester.path / "tasks"
    write_task(root, "t", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    command = (
        "test -f mark && exit 3; touch mark; "
        '[ "$AGENTBENCH_ATTEMPT" = 2 ] && { rm mark; echo 2 > a.txt; }; exit 0'
    )
    result = run(
        pytester,
        "--agent=command",
        f"--agent-cmd={command}",
        "--retry-failures=3",
        f"--tasks={root}",
        "--agentbench-json=r.json",
    )
    result.assert_outcomes(passed=1)
    obs = load(pytester.path / "r.json")["observations"][0]
    assert obs["attempts"] == 3 and obs["first_exact"] is False and obs["final_exact"] is True
    assert [(r["attempt"], r["exit_code"]) for r in obs["rounds"]] == [(0, 0), (1, 0), (2, 0)]


def test_without_agent_only_ordinary_tests_run(pytester) -> None:
    simple_tasks(pytester.path / "tasks", 2)
    (pytester.path / "tasks" / "t00" / "workspace" / "test_inside.py").write_text(
        "def test_x(): assert False\n"
    )
    pytester.makepyfile(test_plain="def test_ok(): pass\n")
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_ini_values_are_defaults_and_the_command_line_wins(pytester) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 2)
    pytester.makeini(
        f"[pytest]\nagentbench_tasks = {tasks}\nagentbench_repeats = 3\n"
        "agentbench_agent_opt =\n    pass_prob=1\n"
    )
    pytester.runpytest_subprocess("--agent=mock").assert_outcomes(passed=6)
    pytester.runpytest_subprocess("--agent=mock", "--repeats=1").assert_outcomes(passed=2)
    pytester.runpytest_subprocess(
        "--agent=mock", "--agent-opt=pass_prob=0", "--repeats=1"
    ).assert_outcomes(failed=2)


def test_explicit_paths_collect_only_the_tasks_beneath_them(pytester) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 3)
    result = run(pytester, "--agent=oracle", str(tasks / "t01"), str(tasks / "t02"))
    result.assert_outcomes(passed=2)


def test_verifier_tasks_run_in_a_copy_and_oracle_overlays_the_solution(pytester) -> None:
    root = pytester.path / "tasks"
    write_task(
        root,
        "v",
        {"n.txt": "1\n"},
        verify="#!/bin/sh\ngrep -qx 2 n.txt\n",
        solution={"n.txt": "2\n"},
    )
    run(pytester, "--agent=oracle", f"--tasks={root}").assert_outcomes(passed=1)
    result = run(pytester, "--agent=nop", f"--tasks={root}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*verifier exit code: 1*"])


def test_approach_similarity_only_for_tasks_a_verifier_grades(pytester) -> None:
    """Against an expected tree every passing trial ends in that tree: no similarity. Passing
    a verifier two ways is half alike (Jaccard of the changed lines)."""
    root = pytester.path / "tasks"
    write_task(root, "e", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    write_task(root, "v", {"n.txt": "1\n"}, verify="#!/bin/sh\ngrep -qx 2 n.txt\n")
    agent = (
        'case "$AGENTBENCH_TASK" in *e) echo 2 > a.txt;; *) echo 2 > n.txt;; esac; '
        '[ "$AGENTBENCH_REPEAT" = 1 ] && echo x > m.txt'
    )
    result = run(
        pytester,
        "--agent=command",
        f"--agent-cmd={agent}; true",
        "--sandbox=tmp",
        f"--tasks={root}",
        "--repeats=2",
        "--agentbench-json=r.json",
    )
    result.assert_outcomes(passed=3, failed=1)  # e::r1 left a stray m.txt
    report = load(pytester.path / "r.json")
    by_task = {t["id"].rsplit("/", 1)[-1]: t for t in report["tasks"]}
    assert by_task["e"]["similarity"] is None
    assert by_task["v"]["similarity"] == pytest.approx(2 / 3)  # {-1, +2} vs {-1, +2, +x}
    assert report["summary"]["similarity_tasks"] == 1
    result.stdout.fnmatch_lines(["*approach similarity 0.667 (1 verifier-graded task)*"])


def test_a_conftest_inside_a_task_is_data_not_a_plugin(pytester) -> None:
    """A task directory is data: the fixtures of a conftest.py in it apply to no trial (so
    sibling tasks can share one fixture lookup)."""
    tasks = simple_tasks(pytester.path / "tasks", 3)
    (tasks / "t01" / "conftest.py").write_text(
        "import pytest\n\n"
        "@pytest.fixture(autouse=True)\n"
        "def mark_trial(request):\n"
        "    open(f'{request.node.name}.ran', 'w').close()\n"
    )
    result = run(pytester, "--agent=oracle", "--repeats=2", f"--tasks={tasks}")
    result.assert_outcomes(passed=6)
    assert not list(pytester.path.glob("*.ran"))


def test_conftest_hooks_beside_the_tasks_apply_to_every_trial(pytester) -> None:
    """Hooks of a conftest.py above the task directories see each of their trials."""
    tasks = simple_tasks(pytester.path / "tasks", 2)
    pytester.makeconftest(
        "def pytest_runtest_setup(item):\n"
        "    with open('hooked.txt', 'a') as out:\n"
        "        print(item.nodeid, file=out)\n"
    )
    result = run(pytester, "--agent=oracle", "--repeats=2", f"--tasks={tasks}")
    result.assert_outcomes(passed=4)
    hooked = sorted((pytester.path / "hooked.txt").read_text().split())
    assert hooked == [f"tasks/t0{t}::r{r}" for t in range(2) for r in range(2)]
