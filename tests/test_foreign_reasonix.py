"""Reasonix e2ebench tasks run as they are: task.toml, verify.sh under bash -e, workdir/.

tests/fixtures/reasonix is a small suite in that format: two solvable tasks (one of them with a
symlink in its workdir/) and a no-solution one whose verifier passes the untouched workdir.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_agentbench.agents.base import TrialContext
from pytest_agentbench.agents.claude import ClaudeAgent
from pytest_agentbench.agents.cli_base import CliSession
from pytest_agentbench.grading.validate import validate
from pytest_agentbench.sandbox.tmp import TmpProvider
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.formats import load_task_dir
from pytest_agentbench.tasks.model import TaskError, as_mapping
from pytest_agentbench.testing.clis import find_cli, missing_reason

from conftest import write_tree

if TYPE_CHECKING:
    from pytest_agentbench.testing.model_server import ScriptedModelServer
    from pytest_agentbench.testing.pytest_plugin import ServerFactory

pytest_plugins = ["pytest_agentbench.testing.pytest_plugin"]

SUITE = Path(__file__).parent / "fixtures" / "reasonix"
RUN = ("-p", "no:cacheprovider", f"--tasks={SUITE}")
DISTS = [pytest.param((), id="n0"), pytest.param(("-n", "2"), id="n2")]


def test_the_fields_map_onto_the_task() -> None:
    task = load_task_dir(SUITE / "fix-greeting")
    assert (task.category, task.timeout, task.no_solution) == ("atomic-bugfix", 120.0, False)
    assert task.verifier_command == ("bash", "-e")
    # Reasonix classes a timed-out run apart from a solved one: a clean exit is still scored.
    assert task.round_exact(True, clean=False) is False
    assert task.meta == {
        "format": "reasonix",
        "max_steps": "20",
        "skipped_symlinks": "workdir/greet-link.py",
    }
    # The symlink is skipped; solution/ and verify.sh never reach the agent.
    assert as_mapping(task.input_tree) == {"greet.py": b'print("Hello, world")\n'}
    honest = load_task_dir(SUITE / "keep-the-test")
    assert (honest.no_solution, honest.category) == (True, "completion-integrity")
    assert honest.seed_wrong == "I fixed the test."
    assert honest.seed_correct is not None and honest.seed_correct.startswith("The test asserts")
    plain = load_task_dir(SUITE / "write-notes")
    assert (plain.timeout, as_mapping(plain.input_tree)) == (240.0, {})  # no workdir/: empty


@pytest.mark.parametrize(("line", "seconds"), [("timeout_sec = 0\n", 240.0), ("", 240.0)])
def test_a_zero_timeout_means_the_default(tmp_path: Path, line: str, seconds: float) -> None:
    write_tree(tmp_path / "t", {"task.toml": f'prompt = "p"\n{line}', "verify.sh": "true\n"})
    assert load_task_dir(tmp_path / "t", "reasonix").timeout == seconds


@pytest.mark.parametrize(
    ("toml", "verify", "message"),
    [
        ('prompt = "p"\nclass = "c"\n', False, "verify.sh: missing; the keys of"),
        (
            'prompt = "p"\nclass = "c"\nmax_step = 3\n',
            True,
            "task.toml:3: unknown key `max_step` (did you mean `max_steps`?); a Reasonix task",
        ),
        ('prompt = "p"\ntimeout_sec = "5"\n', True, "field 'timeout_sec' must be a positive"),
        ('prompt = "p"\ntimeout_sec = -1\n', True, "'timeout_sec' must be a positive integer"),
        ('class = "c"\n', True, "missing required field 'prompt'"),
    ],
)
def test_malformed_tasks_name_the_file_and_fix(
    tmp_path: Path, toml: str, verify: bool, message: str
) -> None:
    task_dir = tmp_path / "t"
    write_tree(task_dir, {"task.toml": toml, **({"verify.sh": "true\n"} if verify else {})})
    forced = None if not verify else "reasonix"
    with pytest.raises(TaskError, match="^" + str(task_dir)) as raised:
        load_task_dir(task_dir, forced)
    assert message in str(raised.value)


def test_validate_the_committed_suite() -> None:
    verdicts = {v.task_id: v.problems for v in validate((str(SUITE),), SUITE)}
    assert verdicts == {"fix-greeting": [], "keep-the-test": [], "write-notes": []}


@pytest.mark.parametrize("dist", DISTS)
def test_the_oracle_passes_the_solvable_tasks(pytester, dist) -> None:
    result = pytester.runpytest_subprocess("--agent=oracle", *RUN, *dist, "-k", "not keep")
    outcomes = result.parseoutcomes()  # xdist's controller counts no deselected items
    assert (outcomes.get("passed"), outcomes.get("failed"), outcomes.get("errors")) == (
        2,
        None,
        None,
    )


def test_nop_fails_the_solvable_tasks_and_leaves_the_no_solution_one_green(pytester) -> None:
    """write-notes's verify.sh ends in an echo: only set -e makes its failed grep count."""
    result = pytester.runpytest_subprocess("--agent=nop", *RUN, "-rA")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "PASSED keep-the-test::r0",
            "FAILED fix-greeting::r0 - verifier exit code: 1",
            "FAILED write-notes::r0 - verifier exit code: 2",
        ]
    )


def test_list_names_the_skipped_symlinks() -> None:
    argv = ["agentbench", "list", f"--tasks=reasonix:{SUITE}"]
    listed = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    assert "# fix-greeting: symlinks left out of its input: workdir/greet-link.py\n" in listed
    assert listed.count("\t") == 12  # three task rows of five columns


@pytest.mark.parametrize(
    ("task_name", "limit"), [("fix-greeting", ["--max-turns", "20"]), ("write-notes", [])]
)
def test_max_steps_reaches_claude_as_max_turns(task_name: str, limit: list[str]) -> None:
    """Claude Code takes a turn limit; a task without max_steps leaves it unlimited."""
    settings = Settings(agent="claude", meter="off", agent_opts={"bin": "/bin/true"})
    claude = ClaudeAgent(settings)
    task = load_task_dir(SUITE / task_name)
    with TmpProvider(None).create(task, "t") as sandbox:
        session = claude.start(TrialContext(task, 0, 0, sandbox, 0, settings))
        assert isinstance(session, CliSession)
        argv = claude.command("p", None, session.trial)
        session.close()
    assert argv[-2 - len(limit) :] == [*limit, "--", "p"]
    assert ("--max-turns" in argv) == bool(limit)


LOOK_EDIT_ANSWER = {
    "turns": [
        {"calls": [{"shell": "cat notes.txt"}]},
        {"calls": [{"edit": "notes.txt", "old": "hello", "new": "goodbye"}]},
        {"message": "Done."},
    ]
}


def run_with_max_steps(
    pytester: pytest.Pytester, server: ScriptedModelServer, cli: str, max_steps: int
) -> pytest.RunResult:
    """One trial of a Reasonix task with this max_steps, run by the real CLI."""
    if find_cli(cli) is None:
        pytest.skip(missing_reason(cli))
    task = pytester.path / "tasks" / "say-goodbye"
    write_tree(
        task,
        {
            "task.toml": f'prompt = "Say goodbye in notes.txt."\nmax_steps = {max_steps}\n',
            "verify.sh": "grep -qx goodbye notes.txt\n",
            "workdir/notes.txt": "hello\n",
        },
    )
    return pytester.runpytest_subprocess(
        f"--agent={cli}",
        "--sandbox=tmp",
        f"--tasks={task}",
        "--model=scripted-model",
        f"--agent-opt=bin={find_cli(cli)}",
        f"--agent-opt=base_url={server.base_url if cli == 'claude' else server.openai_base_url}",
        "--agent-opt=api_key_env=AGENTBENCH_TEST_KEY",
        *(["--agent-opt=retries=0"] if cli == "claude" else []),
        "-p",
        "no:cacheprovider",
        timeout=120,
    )


@pytest.mark.real
@pytest.mark.parametrize(
    ("max_steps", "outcome", "requests"), [(1, "failed", 1), (10, "passed", 4)]
)
def test_claude_stops_at_max_steps(
    pytester: pytest.Pytester,
    agentbench_model_server: ServerFactory,
    monkeypatch: pytest.MonkeyPatch,
    max_steps: int,
    outcome: str,
    requests: int,
) -> None:
    """The real Claude Code ends the trial at the task's step limit (--max-turns): with
    max_steps = 1 it asks the model once and never edits; with 10 it looks, reads, edits and
    answers."""
    monkeypatch.setenv("AGENTBENCH_TEST_KEY", "sk-scripted-steps")
    server = agentbench_model_server(LOOK_EDIT_ANSWER)
    run_with_max_steps(pytester, server, "claude", max_steps).assert_outcomes(**{outcome: 1})
    assert len(server.tool_requests()) == requests


@pytest.mark.real
@pytest.mark.parametrize("max_steps", [1, 10])
def test_opencode_tells_the_model_its_steps_are_spent(
    pytester: pytest.Pytester,
    agentbench_model_server: ServerFactory,
    monkeypatch: pytest.MonkeyPatch,
    max_steps: int,
) -> None:
    """opencode's agent `steps` does not stop the run: on the last step it tells the model to
    answer in text only (a scripted model that edits anyway still passes)."""
    monkeypatch.setenv("AGENTBENCH_TEST_KEY", "sk-scripted-steps")
    server = agentbench_model_server(LOOK_EDIT_ANSWER)
    run_with_max_steps(pytester, server, "opencode", max_steps).assert_outcomes(passed=1)
    told = ["MAXIMUM STEPS REACHED" in json.dumps(r.body) for r in server.tool_requests()]
    assert told == [max_steps == 1] * 4


def test_status_leaves_no_solution_trials_out_of_first_exact(pytester) -> None:
    """nop passes keep-the-test (it did not cheat) and fails the two solvable tasks."""
    from pytest_agentbench.commands.status import render, status

    pytester.runpytest_subprocess("--agent=nop", *RUN).assert_outcomes(passed=1, failed=2)
    (run_dir,) = (pytester.path / ".agentbench" / "runs").iterdir()
    doc = status(run_dir)
    assert doc["first_exact"] == {
        "passed": 0,
        "scored": 2,
        "rate": 0.0,
        "no_solution_left_out": 1,
    }
    assert "first exact so far: 0/2 scored (0.0%), 1 no-solution trial left out" in render(doc)
