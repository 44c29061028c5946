"""An agent that cannot start stops the run before any trial: one line, exit code 4.

Unknown --agent-opt keys, missing credentials of a real CLI, a docker sandbox without an image
and paths that --agent-expose may not show are usage errors, in serial runs and under xdist.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentbench.agents.claude import ClaudeAgent
from pytest_agentbench.agents.codex import CodexAgent
from pytest_agentbench.agents.opencode import OpencodeAgent

from conftest import one_error_line, write_task

CREDENTIALS = sorted(
    {*CodexAgent.credential_env, *ClaudeAgent.credential_env, *OpencodeAgent.credential_env}
)


@pytest.fixture
def tasks(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One task, and an environment without any agent credential."""
    for name in CREDENTIALS:
        monkeypatch.delenv(name, raising=False)
    root = pytester.path / "tasks"
    write_task(root, "t1", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    return root


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (
            ["--agent=mock", "--agent-opt=pass_prob.t1=1", "--agent-opt=bogus=1"],
            "ERROR: --agent-opt bogus: unknown option(s) for --agent=mock; "
            "allowed: seed, pass_prob, pass_prob.*, profile, *usage, integrity",
        ),
        (["--agent=oracle", "--agent-opt=seed=1"], "*for --agent=oracle; allowed: none"),
        (["--agent=nop", "--agent-opt=x=1"], "*--agent-opt x: *--agent=nop; allowed: none"),
        (
            ["--agent=command", "--agent-cmd=true", "--agent-opt=bin=x"],
            "*--agent-opt bin: unknown option(s) for --agent=command; allowed: env",
        ),
        (
            ["--agent=codex", "--agent-opt=bin=/bin/true", "--agent-opt=model_x=1"],
            "*--agent-opt model_x: *allowed: bin, base_url, api_key_env, env, version, sandbox, "
            "retries",
        ),
    ],
    ids=["mock", "oracle", "nop", "command", "codex"],
)
def test_unknown_agent_option_lists_the_allowed_keys(
    pytester: pytest.Pytester, tasks: Path, args: list[str], pattern: str
) -> None:
    one_error_line(pytester.runpytest_subprocess(f"--tasks={tasks}", *args), pattern)


@pytest.mark.parametrize(
    ("agent", "extra", "names"),
    [
        ("codex", [], "OPENAI_API_KEY or CODEX_API_KEY (a `codex login` auth.json is not used*"),
        ("claude", [], "ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN or CLAUDE_CODE_OAUTH_TOKEN*"),
        ("opencode", [], "OPENAI_API_KEY or ANTHROPIC_API_KEY or OPENROUTER_API_KEY*auth.json*"),
        (
            "codex",
            ["--agent-opt=base_url=http://127.0.0.1:9/v1", "--agent-opt=api_key_env=GW_KEY"],
            "GW_KEY (*",
        ),
    ],
    ids=["codex", "claude", "opencode", "codex-gateway"],
)
@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_real_agent_without_credentials_stops_before_the_first_trial(
    pytester: pytest.Pytester,
    tasks: Path,
    agent: str,
    extra: list[str],
    names: str,
    dist: list[str],
) -> None:
    result = pytester.runpytest_subprocess(
        f"--agent={agent}",
        "--agent-opt=bin=/bin/true",
        "--model=m1",
        f"--tasks={tasks}",
        "--sandbox=tmp",
        *extra,
        *dist,
    )
    one_error_line(result, f"ERROR: --agent={agent}: no credentials: set {names}")


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_command_agent_whose_program_is_missing(
    pytester: pytest.Pytester, tasks: Path, dist: list[str]
) -> None:
    result = pytester.runpytest_subprocess(
        "--agent=command", "--agent-cmd=no-such-agent --go", f"--tasks={tasks}", *dist
    )
    one_error_line(
        result,
        "ERROR: --agent-cmd 'no-such-agent --go': command not found: no-such-agent (not on PATH);"
        " install it, or name it by its path",
    )


def test_credentials_are_not_needed_to_collect(pytester: pytest.Pytester, tasks: Path) -> None:
    result = pytester.runpytest_subprocess(
        "--agent=codex", "--agent-opt=bin=/bin/true", f"--tasks={tasks}", "--collect-only"
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*t1*"])


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_docker_sandbox_without_an_image(
    pytester: pytest.Pytester, tasks: Path, dist: list[str]
) -> None:
    result = pytester.runpytest_subprocess(
        "--agent=nop", f"--tasks={tasks}", "--sandbox=docker", *dist
    )
    one_error_line(
        result, "ERROR: --sandbox=docker needs an image: pass --docker-image IMAGE (ini *)*"
    )


@pytest.mark.parametrize(
    ("exposed", "pattern"),
    [
        ("missing", "ERROR: --agent-expose: */missing does not exist"),
        (".", "ERROR: --agent-expose: * is */test_*, which agents must not see*"),
        ("tasks/t1", "ERROR: --agent-expose: */tasks/t1 is task data (*/tasks)*"),
    ],
    ids=["missing", "invocation-dir", "task-data"],
)
def test_agent_expose_refuses_what_agents_must_not_see(
    pytester: pytest.Pytester, tasks: Path, exposed: str, pattern: str
) -> None:
    pytester.makeini(f"[pytest]\nagentbench_agent_expose =\n    {exposed}\n")
    result = pytester.runpytest_subprocess(
        "--agent=command", "--agent-cmd=true", f"--tasks={tasks}", "--sandbox=tmp"
    )
    one_error_line(result, pattern)


@pytest.mark.parametrize(
    ("args", "exposed", "pattern"),
    [
        ([], ".agentbench", "ERROR: --agent-expose: */.agentbench holds */.agentbench/runs, *"),
        (["-c", "proj/pytest.ini"], "proj", "ERROR: --agent-expose: */proj is */proj, *"),
        (["--agentbench-dir=out/run"], "out", "ERROR: --agent-expose: */out holds */out/run*"),
    ],
    ids=["runs", "project", "run-dir"],
)
def test_agent_expose_refuses_the_project_and_where_runs_go(
    pytester: pytest.Pytester, tasks: Path, args: list[str], exposed: str, pattern: str
) -> None:
    for directory in (".agentbench/runs", "proj", "out"):
        pytester.path.joinpath(directory).mkdir(parents=True)
    pytester.path.joinpath("proj", "pytest.ini").write_text("[pytest]\n")
    result = pytester.runpytest_subprocess(
        "--agent=command",
        "--agent-cmd=true",
        f"--tasks={tasks}",
        "--sandbox=tmp",
        f"--agent-expose={exposed}",
        *args,
    )
    one_error_line(result, pattern)


@pytest.mark.parametrize(
    ("command", "path"),
    [("python3 my_agnt.py", "my_agnt.py"), ("./nope.sh --go", "./nope.sh")],
    ids=["script", "program"],
)
@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_command_agent_whose_script_is_missing(
    pytester: pytest.Pytester, tasks: Path, command: str, path: str, dist: list[str]
) -> None:
    result = pytester.runpytest_subprocess(
        "--agent=command", f"--agent-cmd={command}", f"--tasks={tasks}", "--sandbox=tmp", *dist
    )
    one_error_line(
        result,
        f"ERROR: --agent-cmd {command!r}: {path} not found, neither in {pytester.path} (where "
        "pytest was started) nor in any task's input tree; correct the path, or start pytest "
        "where it resolves",
    )


def test_command_agent_may_run_a_script_of_the_workspace(
    pytester: pytest.Pytester, tasks: Path
) -> None:
    """A script that is not beside pytest but in the tasks' input trees is theirs to run."""
    write_task(
        tasks,
        "t2",
        {"a.txt": "1\n", "solve.sh": "echo 2 > a.txt\n"},
        {"a.txt": "2\n", "solve.sh": "echo 2 > a.txt\n"},
    )
    result = pytester.runpytest_subprocess(
        "--agent=command", "--agent-cmd=sh solve.sh", f"--tasks={tasks}", "--sandbox=tmp"
    )
    result.assert_outcomes(passed=1, failed=1)  # t1 has no solve.sh: its trial fails alone
