"""--agentbench-concurrency: many trials in flight per process, reported as a serial run is.

Real runs through pytest (pytester subprocesses) with real agent processes: the reports of
concurrency 1 and 8 agree, serially and under xdist; trials overlap up to the limit and never
past it; -x, a budget and Ctrl-C start nothing after the stop, record every trial started,
and an interrupted run resumes to the uninterrupted result.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from test_arms_run import suite as arms_suite
from test_graceful_stop import finish, recorded, resume_command, running, start, wait_for
from tiny_tasks import make_tasks

from pytest_agentbench.run.ahead import Inbox

from conftest import one_error_line, simple_tasks, without_measured_times

DIST = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
# Solves the tasks whose number is even, after a moment: a mix of outcomes, trials that overlap.
HALF_SOLVES = (
    'sleep 0.2; grep -q "value [024]$" a.txt && sed -i -e s/0/1/ -e s/2/3/ -e s/4/5/ a.txt'
)
AGENTS = {
    "mock": ["--agent=mock", "--agentbench-seed=5"],
    "command": ["--agent=command", f"--agent-cmd={HALF_SOLVES}"],
    "oracle": ["--agent=oracle"],
    "mock-recoveries": ["--agent=mock", "--agentbench-seed=5", "--oracle-recoveries=1"],
}


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def comparable(report: dict) -> dict:
    """What two runs of the same trials share: no run ids, settings, times measured or where
    a resumed trial was reused from."""
    report = without_measured_times(report)
    observations = [
        {k: v for k, v in o.items() if k not in ("rounds", "trial_id", "wall_s", "reused")}
        for o in report["observations"]
    ]
    summary = {k: v for k, v in report["summary"].items() if k != "wall_s"}
    tasks = [{k: v for k, v in task.items() if k != "wall_s_cv"} for task in report["tasks"]]
    return {"summary": summary, "tasks": tasks, "observations": observations}


def outcome_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.endswith(("PASSED", "FAILED"))]


@DIST
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_reports_at_concurrency_8_are_those_of_concurrency_1(
    pytester: pytest.Pytester, agent: str, dist: list[str]
) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 6)
    common = [*AGENTS[agent], "--sandbox=tmp", "--repeats=3", f"--tasks={tasks}", "-v"]
    one = run(pytester, *common, "--agentbench-json=one.json")
    many = run(pytester, *common, *dist, "--agentbench-concurrency=8", "--agentbench-json=8.json")
    reference, other = load(pytester.path / "one.json"), load(pytester.path / "8.json")
    assert len(reference["observations"]) == 18
    assert comparable(reference) == comparable(other)
    assert other["run"]["settings"]["concurrency"] == 8
    if not dist:  # in the same order, item by item
        assert outcome_lines(one) == outcome_lines(many)
    assert many.ret == one.ret


@DIST
def test_arms_interleave_and_keep_at_concurrency_4_as_one_at_a_time(
    pytester: pytest.Pytester, dist: list[str]
) -> None:
    common = [
        "--agent=mock",
        "--sandbox=tmp",
        *arms_suite(pytester),
        "--repeats=2",
        "--agentbench-keep=failed",
    ]
    run(pytester, *common, "--agentbench-json=one.json", "--agentbench-dir=one")
    run(pytester, *common, *dist, "--agentbench-concurrency=4", "--agentbench-json=4.json")
    reference, other = load(pytester.path / "one.json"), load(pytester.path / "4.json")
    assert {o.get("arm") for o in reference["observations"]} >= {"vanilla", "core"}
    assert comparable(reference) == comparable(other)
    assert reference["arms"] == other["arms"]
    kept = {p.name for p in (pytester.path / "one" / "trials").iterdir()}
    other_dir = Path(other["run"]["run_dir"])
    assert kept and kept == {p.name for p in (other_dir / "trials").iterdir()}


def command_agent(agent_cmd: str, tasks: Path) -> list[str]:
    """A run of the command agent on tasks, in the tmp sandbox (it writes to the host's log)."""
    return ["--agent=command", f"--agent-cmd={agent_cmd}", "--sandbox=tmp", f"--tasks={tasks}"]


def spans(log: Path) -> list[tuple[float, float]]:
    """(start, end) of every agent process, from the lines each wrote."""
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    for line in log.read_text().splitlines():
        what, trial, stamp = line.split()
        (starts if what == "start" else ends)[trial] = float(stamp)
    assert starts.keys() == ends.keys()
    return [(starts[trial], ends[trial]) for trial in starts]


def most_at_once(periods: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in periods] + [(e, -1) for _, e in periods])
    now = most = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def logging_agent(log: Path, body: str = "sleep 1") -> str:
    """A command agent that notes when it starts and ends (to the host's log: --sandbox=tmp)."""
    trial = "$AGENTBENCH_TASK-$AGENTBENCH_REPEAT"
    return (
        f'echo "start {trial} $(date +%s.%N)" >> {log}; {body}; '
        f'echo "end {trial} $(date +%s.%N)" >> {log}'
    )


@pytest.mark.parametrize(
    ("dist", "limit", "most"), [([], 3, 3), (["-n", "2"], 2, 4)], ids=["serial", "xdist"]
)
def test_trials_overlap_up_to_the_limit_and_never_past_it(
    pytester: pytest.Pytester, dist: list[str], limit: int, most: int
) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 4)
    log = pytester.path / "agents.log"
    run(
        pytester,
        *command_agent(logging_agent(log), tasks),
        "--repeats=3",
        f"--agentbench-concurrency={limit}",
        "--agentbench-dir=run",
        *dist,
    )
    periods = spans(log)
    assert len(periods) == 12
    # Every trial sleeps a second and starts in milliseconds: the limit is reached...
    assert most_at_once(periods) >= most - (1 if dist else 0)
    assert most_at_once(periods) <= most  # ... and never passed
    if not dist:  # status sees a trial running from when it starts until it is reported
        progress = (pytester.path / "run" / "progress.jsonl").read_text().splitlines()
        now = seen = 0
        for event in map(json.loads, progress):
            now += 1 if "start" in event else -1 if "end" in event else 0
            seen = max(seen, now)
        assert limit <= seen <= 2 * limit  # (a finished trial may wait for its turn)


@DIST
def test_x_starts_no_trial_after_the_first_failure_and_records_those_started(
    pytester: pytest.Pytester, dist: list[str]
) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 6)
    log = pytester.path / "agents.log"
    result = run(
        pytester,
        *command_agent(logging_agent(log, "sleep 0.3"), tasks),
        "--repeats=4",
        "--agentbench-concurrency=3",
        "--agentbench-dir=run",
        "-x",
        *dist,
    )
    started = spans(log)
    observations = recorded(pytester.path / "run")
    assert len(observations) == len(started), "every trial started is recorded"
    assert 1 < len(started) <= 3 * (2 if dist else 1), "none started past the failure"
    result.assert_outcomes(failed=len(started))


@DIST
def test_a_budget_counts_trials_as_they_finish_and_resume_completes_the_run(
    pytester: pytest.Pytester, dist: list[str]
) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 6)
    log = pytester.path / "agents.log"
    costs = logging_agent(log, "sleep 0.3; echo '{\"cost_usd\": 1.0}' > $AGENTBENCH_USAGE_FILE")
    common = command_agent(costs, tasks)
    result = run(
        pytester,
        *common,
        "--repeats=2",
        "--agentbench-concurrency=3",
        "--agentbench-budget-usd=2.5",
        "--agentbench-dir=run",
        *dist,
    )
    assert result.ret != 0
    observations = recorded(pytester.path / "run")
    scored = [o for o in observations if o["status"] == "scored"]
    not_started = [o for o in observations if o["status"] == "budget_exhausted"]
    assert len(scored) + len(not_started) == 12
    periods = spans(log)
    assert len(scored) == len(periods), "every trial started is recorded"
    # The third trial to finish reaches the budget: none starts after it (a moment's grace
    # for the harness to see its process end); those running then finish past it.
    reached = sorted(end for _, end in periods)[2]
    assert [start for start, _ in periods if start > reached + 0.5] == []
    # At most the trials in flight when the budget is reached finish past it: serially the
    # other two; under -n a worker also knows the other's spend only once it is reported, so
    # each may reach its own three finished, two more started meanwhile.
    assert 3 <= len(scored) <= (2 * (3 + 2) if dist else 3 + 2)
    resumed = run(
        pytester,
        *common,
        "--agentbench-resume=run",
        "--agentbench-budget-usd=100",
        "--agentbench-json=all.json",
        *dist,
    )
    assert resumed.ret == 1  # the agent solves nothing
    assert len(load(pytester.path / "all.json")["observations"]) == 12


SOLVES_SLOWLY = [
    "-p",
    "no:randomly",
    "--agent=command",
    "--agent-cmd=sleep 0.8; sed -i s/draft/final/ notes.txt",
    "--sandbox=tmp",
    "--tasks=tiny-tasks",
    "--repeats=2",
    "--agentbench-concurrency=3",
]


@DIST
def test_an_interrupted_concurrent_run_resumes_to_the_uninterrupted_result(
    pytester: pytest.Pytester, dist: list[str]
) -> None:
    make_tasks(pytester.path, 6)
    project = pytester.path
    whole = run(pytester, *SOLVES_SLOWLY, "--agentbench-json=whole.json")
    assert whole.ret == 0
    process = start(project, *SOLVES_SLOWLY, "--agentbench-dir=run", *dist)
    wait_for(lambda: running(project / "run", 0.3))
    in_flight = running(project / "run", 0)
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C
    output = finish(process)
    assert process.returncode == pytest.ExitCode.INTERRUPTED
    observations = recorded(project / "run")
    nodeids = {f"tiny-tasks/{o['task']}::r{o['repeat']}" for o in observations}
    assert in_flight <= nodeids, f"every trial running at the signal is recorded\n{output}"
    assert all(o["status"] == "scored" for o in observations)
    assert len(observations) < 12

    command = [*resume_command(output), "--agentbench-json=resumed.json"]
    resumed = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stdout
    assert comparable(load(project / "resumed.json")) == comparable(load(project / "whole.json"))


def test_a_second_signal_kills_every_trial_in_flight(pytester: pytest.Pytester) -> None:
    make_tasks(pytester.path, 6)
    project = pytester.path
    pids = project / "pids"
    pids.mkdir()
    agent = f"--agent-cmd=echo $$ > {pids}/$$; exec sleep 60"
    process = start(
        project,
        *SOLVES_SLOWLY[:3],
        agent,
        *SOLVES_SLOWLY[4:],
        "--agentbench-dir=run",
    )
    wait_for(lambda: len(list(pids.iterdir())) == 3)
    os.killpg(process.pid, signal.SIGINT)
    time.sleep(0.3)
    stop_at_once(process, "the trials in flight did not wait for their agents")
    for pid in pids.iterdir():
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid.name), 0)
    assert recorded(project / "run") == []


def test_a_second_signal_while_the_started_trials_finish_kills_them(
    pytester: pytest.Pytester,
) -> None:
    make_tasks(pytester.path, 6)
    project = pytester.path
    pids = project / "pids"
    pids.mkdir()
    # The first trial ends soon; the others would take a minute.
    agent = (
        "--agent-cmd=sh -c 'if [ $AGENTBENCH_TASK-$AGENTBENCH_REPEAT = t00-0 ]; then sleep 0.5; "
        f"else echo $$ > {pids}/$$; exec sleep 60; fi'"
    )
    process = start(project, *SOLVES_SLOWLY[:3], agent, *SOLVES_SLOWLY[4:], "--agentbench-dir=run")
    wait_for(lambda: len(list(pids.iterdir())) == 2)
    os.killpg(process.pid, signal.SIGINT)  # the loop ends after the first trial...
    wait_for(lambda: len(recorded(project / "run")) == 1)  # ... which is recorded
    time.sleep(0.3)
    stop_at_once(process, "the started trials did not wait for their agents")  # as they finish
    assert not [pid.name for pid in pids.iterdir() if alive(int(pid.name))]


def stop_at_once(process: subprocess.Popen[str], why_slow: str) -> None:
    """A second Ctrl-C: the run ends within seconds, interrupted."""
    os.killpg(process.pid, signal.SIGINT)
    began = time.monotonic()
    output = finish(process)
    assert time.monotonic() - began < 20, why_slow
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output


def alive(pid: int) -> bool:
    """Whether the process runs: a killed one its parent has not reaped yet is dead."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


GRADER_CONFTEST = """
import threading

def pytest_agentbench_grade(task, workspace):
    with open("threads.log", "a") as log:
        log.write(f"{threading.current_thread() is threading.main_thread()}\\n")
"""


def test_a_conftest_grader_is_called_on_pytest_thread(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(GRADER_CONFTEST)
    tasks = simple_tasks(pytester.path / "tasks", 4)
    result = run(
        pytester,
        "--agent=oracle",
        "--sandbox=tmp",
        "--repeats=2",
        f"--tasks={tasks}",
        "--agentbench-concurrency=4",
    )
    result.assert_outcomes(passed=8)
    assert (pytester.path / "threads.log").read_text().split() == ["True"] * 8


def test_concurrency_is_checked_and_refused_with_work_stealing(pytester: pytest.Pytester) -> None:
    one_error_line(
        run(pytester, "--agent=mock", "--agentbench-concurrency=0"),
        "*--agentbench-concurrency*",
    )
    one_error_line(
        run(pytester, "--agent=mock", "--agentbench-concurrency=4", "-n", "2", "--dist=worksteal"),
        "*--agentbench-concurrency with --dist worksteal*use --dist load*",
    )


def test_the_inbox_runs_a_thread_s_calls_on_the_serving_thread() -> None:
    inbox = Inbox()
    seen: list[bool] = []
    answers: list[object] = []
    done = threading.Event()

    def ask() -> None:
        answers.append(inbox.call(lambda: seen.append(threading.current_thread() is inbox.thread)))
        try:
            inbox.call(lambda: 1 / 0)
        except ZeroDivisionError as error:
            answers.append(type(error))
        done.set()
        inbox.wake()

    threading.Thread(target=ask).start()
    inbox.serve(done.is_set, lambda: None)
    assert seen == [True] and answers == [None, ZeroDivisionError]
