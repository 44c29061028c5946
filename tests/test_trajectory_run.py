"""Trajectories in a run: every trial directory gets trajectory.json and raw.jsonl.gz, the
Observation its figures, the terminal its lines; retrace gives the same figures back."""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
from pathlib import Path

import jsonschema
import pytest
from inline_payloads import payloads_of

from pytest_agentbench.cli import main as agentbench
from pytest_agentbench.trajectory.raw import ARCHIVE, read_archive

from conftest import simple_tasks, write_task

SCHEMA = json.loads((Path(__file__).parent / "fixtures" / "atif-v1.4.schema.json").read_text())
DISTS = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])


def run_dir(pytester: pytest.Pytester) -> Path:
    (found,) = (pytester.path / ".agentbench" / "runs").iterdir()
    return found


def observations(directory: Path) -> list[dict]:
    lines = (directory / "observations.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@DISTS
def test_mock_trials_carry_simulated_trajectories_that_agree_with_their_figures(
    pytester: pytest.Pytester, dist: list[str]
) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 3)
    result = pytester.runpytest_subprocess("--agent=mock", f"--tasks={tasks}", "--repeats=2", *dist)
    result.stdout.fnmatch_lines(
        [
            "trajectories (6 simulated), a trial: * requests, * tool calls (*), * test runs, *",
            "time: model *% (* s) * tools *% (* s) * harness *% (* s) [[]6 of 6 trials]",
            "per solved task (* solved of 6 trials): * tokens * requests * rounds * tool calls",
            "transcript checks: claimed done without a change 0/6 *",
        ]
    )
    directory = run_dir(pytester)
    for observation in observations(directory):
        name = f"{observation['task']}-r{observation['repeat']}"
        trial = directory / "trials" / name
        document = json.loads((trial / "trajectory.json").read_text())
        jsonschema.validate(document, SCHEMA)
        assert document["extra"]["origin"] == "simulated"
        agent_steps = [s for s in document["steps"] if s["source"] == "agent"]
        figures = observation["trajectory"]
        # The simulation agrees with the figures the mock drew for the trial.
        assert figures["requests"] == observation["agent"]["turns"] == len(agent_steps)
        assert figures["tool_calls"]["total"] == observation["agent"]["tool_calls"]
        prompt = sum(s["metrics"]["prompt_tokens"] for s in agent_steps)
        assert prompt == observation["tokens"]["input"]
        user = [s for s in document["steps"] if s["source"] == "user"]
        assert len(user) == len(observation["rounds"])  # each round's prompt, recoveries too
        evidence = read_archive((trial / ARCHIVE).read_bytes())
        assert len(evidence.rounds) == len(observation["rounds"])
        assert evidence.trial["agent"] == "mock"


def test_retrace_gives_back_the_figures_the_run_recorded(pytester: pytest.Pytester, capsys) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 3)
    pytester.runpytest_subprocess("--agent=mock", f"--tasks={tasks}", "--repeats=2")
    directory = run_dir(pytester)
    before = observations(directory)
    trajectories = {p: p.read_text() for p in (directory / "trials").glob("*/trajectory.json")}
    for path in trajectories:
        path.write_text("{}")  # what a parser fix would rewrite
    assert agentbench(["retrace", str(directory)]) == 0
    assert "retraced 6 trials" in capsys.readouterr().err
    assert observations(directory) == before
    assert {p: p.read_text() for p in trajectories} == trajectories


def test_atif_export_writes_one_file_per_trial(pytester: pytest.Pytester, capsys) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 2)
    pytester.runpytest_subprocess("--agent=mock", f"--tasks={tasks}", "--repeats=2")
    out = pytester.path / "atif"
    assert agentbench(["report", str(run_dir(pytester)), "--format", "atif", "-o", str(out)]) == 0
    assert "wrote 4 ATIF trajectories" in capsys.readouterr().out
    files = sorted(p.name for p in out.iterdir())
    assert files == ["t00-r0.json", "t00-r1.json", "t01-r0.json", "t01-r1.json"]
    assert agentbench(["report", str(run_dir(pytester)), "--format", "atif"]) == 2
    assert "give a run directory and -o DIR" in capsys.readouterr().err


def test_raw_limit_zero_keeps_no_evidence_but_the_trajectory(pytester: pytest.Pytester) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 1)
    pytester.runpytest_subprocess("--agent=mock", f"--tasks={tasks}", "--agentbench-raw-limit=0")
    trial = run_dir(pytester) / "trials" / "t00-r0"
    assert not (trial / ARCHIVE).exists()
    assert (trial / "trajectory.json").is_file()


def test_a_misspelt_raw_limit_is_a_usage_error(pytester: pytest.Pytester) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 1)
    result = pytester.runpytest_subprocess(
        "--agent=mock", f"--tasks={tasks}", "--agentbench-raw-limit=lots"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentbench-raw-limit 'lots': expected a size*"])


def test_the_command_agent_gives_its_own_steps_or_its_stdout(pytester: pytest.Pytester) -> None:
    root = pytester.path / "tasks"
    write_task(root, "own", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    step = {
        "step_id": 1,
        "source": "agent",
        "message": "editing",
        "tool_calls": [
            {"tool_call_id": "c1", "function_name": "write", "arguments": {"path": "a.txt"}}
        ],
    }
    script = (
        "import json, os; open('a.txt', 'w').write('2\\n'); print('plain line'); "
        f"open(os.environ['AGENTBENCH_TRAJECTORY_FILE'], 'w').write(json.dumps({step!r}) + '\\n')"
        " if os.environ['AGENTBENCH_TASK'] == 'own' else None"
    )
    write_task(root, "plain", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    command = f'{sys.executable} -c "{script}"'
    pytester.runpytest_subprocess(
        "--agent=command", "--sandbox=tmp", f"--agent-cmd={command}", f"--tasks={root}"
    )
    trials = run_dir(pytester) / "trials"
    own = json.loads((trials / "own-r0" / "trajectory.json").read_text())
    jsonschema.validate(own, SCHEMA)
    assert own["extra"]["origin"] == "file"
    assert [c["function_name"] for c in own["steps"][1]["tool_calls"]] == ["write"]
    plain = json.loads((trials / "plain-r0" / "trajectory.json").read_text())
    assert plain["extra"]["origin"] == "stdout"
    assert [s["message"] for s in plain["steps"] if s["source"] == "agent"] == ["plain line"]
    raw = gzip.decompress((trials / "plain-r0" / ARCHIVE).read_bytes()).decode()
    assert "plain line" in raw


def test_html_markdown_and_csv_show_the_trajectory_figures(
    pytester: pytest.Pytester, capsys
) -> None:
    tasks = simple_tasks(pytester.path / "tasks", 2)
    pytester.runpytest_subprocess("--agent=mock", f"--tasks={tasks}", "--repeats=2")
    directory = str(run_dir(pytester))
    for form in ("html", "md"):
        out = pytester.path / f"report.{form}"
        assert agentbench(["report", directory, "--format", form, "-o", str(out)]) == 0
    index = payloads_of((pytester.path / "report.html").read_text())["index"]
    shown = index["configurations"][0]["trajectories"]
    assert shown["origins"] == {"simulated": 4} and shown["requests"]["trials"] == 4
    markdown = (pytester.path / "report.md").read_text().splitlines()
    start = next(i for i, line in enumerate(markdown) if line.startswith("## Trajectories"))
    header, _rule, row = markdown[start + 2 : start + 5]
    assert "requests" in header and "| 4 " in row and "4 simulated" in row
    capsys.readouterr()
    assert agentbench(["report", directory, "--format", "csv"]) == 0
    first = next(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert first["trajectory.origin"] == "simulated"
    assert first["trajectory.requests"] == first["agent.turns"]
