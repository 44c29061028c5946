"""The command agent: environment, exit codes, deadlines and process-group cleanup."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_agentbench.sandbox.ownership import OWNER_PREFIX

from conftest import write_task


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_environment_and_prompt_file(pytester, monkeypatch) -> None:
    root = pytester.path / "tasks"
    write_task(root, "env-task", {"a.txt": "1\n"}, {"a.txt": "2\n"}, prompt="Say hello.")
    out = pytester.path / "out.json"
    monkeypatch.setenv("OUT", str(out))
    monkeypatch.setenv("SECRET_TOKEN", "do-not-pass")
    script = (
        "import json, os, sys; "
        "env = {k: v for k, v in os.environ.items() if k.startswith(('AGENTBENCH', 'SECRET'))}; "
        "env['prompt'] = open(os.environ['AGENTBENCH_PROMPT_FILE']).read(); "
        "env['cwd'] = os.getcwd(); json.dump(env, open(os.environ['OUT'], 'w'))"
    )
    command = f'{sys.executable} -c "{script}"'
    pytester.runpytest_subprocess(
        "--agent=command",
        "--sandbox=tmp",
        f"--agent-cmd={command}",
        "--agent-opt=env=OUT",
        f"--tasks={root}",
        "--repeats=2",
    )
    env = json.loads(out.read_text())
    assert env["prompt"] == "Say hello."
    assert env["AGENTBENCH_TASK"] == "env-task"
    assert env["AGENTBENCH_REPEAT"] == "1" and env["AGENTBENCH_ROUND"] == "0"
    assert "SECRET_TOKEN" not in env
    assert env["cwd"] == env["AGENTBENCH_WORKSPACE"]
    assert "AGENTBENCH_FEEDBACK_FILE" not in env


@pytest.mark.parametrize("agent_home", ["auto", "disk"])
def test_private_home_in_memory_or_beside_the_workspace(pytester, monkeypatch, agent_home):
    from pytest_agentbench.sandbox import home_parent

    out = pytester.mkdir("out")
    monkeypatch.setenv("OUT", str(out))
    root = pytester.path / "tasks"
    write_task(root, "home-task", {"a.txt": "1\n"}, {"a.txt": "1\n"})
    script = (
        "import json, os, stat, sys; home = os.environ['HOME']; "
        "open(os.path.join(os.environ['TMPDIR'], 'scratch'), 'w').close(); "
        "facts = dict(home=home, workspace=os.getcwd(), mode=stat.S_IMODE(os.stat(home).st_mode),"
        " tmp_in_home=os.path.dirname(os.environ['TMPDIR']) == home); "
        "json.dump(facts, open(os.path.join(os.environ['OUT'], os.environ['AGENTBENCH_REPEAT']),"
        " 'w'))"
    )
    result = pytester.runpytest_subprocess(
        "--agent=command",
        "--sandbox=tmp",
        f'--agent-cmd={sys.executable} -c "{script}"',
        "--agent-opt=env=OUT",
        f"--agent-home={agent_home}",
        f"--tasks={root}",
        "--repeats=2",
    )
    result.assert_outcomes(passed=2)
    facts = [json.loads((out / name).read_text()) for name in ("0", "1")]
    memory = home_parent(agent_home)
    for fact in facts:
        assert fact["tmp_in_home"]
        if memory:  # inside this process's owner directory in memory
            owner = Path(fact["home"]).parent
            assert owner.parent == Path(memory) and owner.name.startswith(OWNER_PREFIX)
            assert fact["mode"] == 0o700  # other users of /dev/shm cannot look in
        else:
            assert Path(fact["home"]) == Path(fact["workspace"]).parent / "home"
        assert not Path(fact["home"]).exists()  # removed with the trial
    assert facts[0]["home"] != facts[1]["home"]


def test_agent_home_choices_are_checked(pytester) -> None:
    result = pytester.runpytest_subprocess("--agent=mock", "--agent-home=ram")
    result.stderr.fnmatch_lines(["*--agent-home 'ram': choose one of auto, disk*"])


def test_nonzero_exit_fails_even_with_the_right_tree(pytester) -> None:
    root = pytester.path / "tasks"
    write_task(root, "t", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    result = pytester.runpytest_subprocess(
        "--agent=command",
        "--sandbox=tmp",
        "--agent-cmd=echo 2 > a.txt; echo boom >&2; exit 4",
        "--tb=long",  # the stderr tail is in the story, not in the one-line summary
        f"--tasks={root}",
        "--agentbench-json=r.json",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*agent exited with code 4*", "*boom*"])
    rounds = json.loads((pytester.path / "r.json").read_text())["observations"][0]["rounds"]
    assert rounds[0]["exit_code"] == 4 and rounds[0]["exact"] is False
    assert rounds[0]["eof_normalized"] is False


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_deadline_kills_the_whole_process_group(pytester, dist) -> None:
    root = pytester.path / "tasks"
    write_task(root, "t", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    pidfile = pytester.path / "child.pid"
    command = f"sleep 300 & echo $! > {pidfile}; echo 2 > a.txt; sleep 300"
    started = time.monotonic()
    result = pytester.runpytest_subprocess(
        "--agent=command",
        "--sandbox=tmp",
        f"--agent-cmd={command}",
        "--agent-timeout=1.5",
        f"--tasks={root}",
        "--agentbench-json=r.json",
        *dist,
    )
    assert time.monotonic() - started < 60
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*agent timed out after*"])
    obs = json.loads((pytester.path / "r.json").read_text())["observations"][0]
    assert obs["rounds"][0]["timed_out"] is True and obs["rounds"][0]["exit_code"] is None
    assert not _pid_alive(int(pidfile.read_text()))


def test_a_background_process_left_after_exit_is_killed(pytester) -> None:
    root = pytester.path / "tasks"
    write_task(root, "t", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    pidfile = pytester.path / "child.pid"
    command = f"(sleep 300 &) ; pgrep -n sleep > {pidfile}; echo 2 > a.txt"
    pytester.runpytest_subprocess(
        "--agent=command", "--sandbox=tmp", f"--agent-cmd={command}", f"--tasks={root}"
    ).assert_outcomes(passed=1)
    assert not _pid_alive(int(pidfile.read_text()))


def test_usage_file_is_read_and_partial_usage_stays_partial(pytester) -> None:
    root = pytester.path / "tasks"
    write_task(root, "t", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    command = (
        "echo 2 > a.txt; "
        'echo \'{"input": 100, "output": 20, "cost_usd": 0.01}\' > "$AGENTBENCH_USAGE_FILE"'
    )
    pytester.runpytest_subprocess(
        "--agent=command",
        "--sandbox=tmp",
        f"--agent-cmd={command}",
        f"--tasks={root}",
        "--agentbench-json=r.json",
    )
    obs = json.loads((pytester.path / "r.json").read_text())["observations"][0]
    assert obs["tokens"] == {
        "input": 100,
        "cached_input": None,
        "output": 20,
        "reasoning": None,
        "cache_write": None,
    }
    assert obs["cost_usd"] == 0.01


def test_plugin_import_stays_cheap_without_agent(tmp_path: Path) -> None:
    code = (
        "import sys, pytest; "
        "rc = pytest.main(['--co', '-q', '-p', 'no:cacheprovider', '/nonexistent-dir']); "
        "heavy = [m for m in ('numpy', 'docker', 'tabulate') if m in sys.modules]; "
        "print('HEAVY', heavy)"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    ).stdout
    assert "HEAVY []" in output


def _python_on_path(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """`python` is the interpreter running these tests (a venv, pyenv: outside /usr)."""
    bin_dir = pytester.mkdir("bin")
    (bin_dir / "python").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")


@pytest.mark.real
@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_readme_command_agent_runs_under_bwrap(pytester, monkeypatch, dist) -> None:
    from conftest import skip_unless_sandbox

    skip_unless_sandbox("bwrap")
    _python_on_path(pytester, monkeypatch)
    root = pytester.path / "tasks"
    write_task(root, "t", {"a.txt": "1\n"}, {"a.txt": "2\n", "ran.txt": "yes\n"})
    pytester.path.joinpath("my_agent.py").write_text(
        "import pathlib, sys\n"
        "pathlib.Path('a.txt').write_text('2\\n')\n"
        "pathlib.Path('ran.txt').write_text('yes\\n')\n"
    )
    result = pytester.runpytest_subprocess(
        "--agent=command",
        "--agent-cmd=python my_agent.py",
        "--sandbox=bwrap",
        f"--tasks={root}",
        "--repeats=2",
        "--agentbench-json=r.json",
        *dist,
    )
    result.assert_outcomes(passed=2)
    info = json.loads((pytester.path / "r.json").read_text())["run"]["agent_info"]
    assert info["command"] == "python my_agent.py"
    assert info["command_resolved"].endswith(f" {pytester.path / 'my_agent.py'}")


@pytest.mark.real
def test_exposed_path_is_readable_and_home_and_task_data_are_not(
    pytester, monkeypatch, tmp_path_factory
) -> None:
    from conftest import skip_unless_sandbox

    skip_unless_sandbox("bwrap")
    _python_on_path(pytester, monkeypatch)
    shared = pytester.mkdir("shared")
    (shared / "data.txt").write_text("shared data\n")
    home = tmp_path_factory.mktemp("home")  # outside the invocation directory
    (home / "secret.txt").write_text("home secret\n")
    monkeypatch.setenv("HOME", str(home))
    root = shared / "tasks"  # task data inside an exposed directory stays hidden
    expected = {
        "shared.txt": "shared data\n",
        "write.txt": "refused\n",
        "home.txt": "hidden\n",
        "tasks.txt": "hidden\n",
    }
    write_task(root, "t", {"a.txt": "1\n"}, {"a.txt": "1\n", **expected})
    pytester.path.joinpath("probe.py").write_text(
        "import os, sys\n"
        "def read(path):\n"
        "    try:\n"
        "        return open(path).read()\n"
        "    except OSError:\n"
        "        return 'hidden\\n'\n"
        f"open('shared.txt', 'w').write(read({str(shared / 'data.txt')!r}))\n"
        "try:\n"
        f"    open({str(shared / 'new.txt')!r}, 'w').close()\n"
        "    open('write.txt', 'w').write('written\\n')\n"
        "except OSError:\n"
        "    open('write.txt', 'w').write('refused\\n')\n"
        f"open('home.txt', 'w').write(read({str(home / 'secret.txt')!r}))\n"
        f"open('tasks.txt', 'w').write(read({str(root / 't' / 'expected' / 'a.txt')!r}))\n"
    )
    result = pytester.runpytest_subprocess(
        "--agent=command",
        "--agent-cmd=python probe.py",
        "--sandbox=bwrap",
        f"--agent-expose={shared}",
        f"--tasks={root}",
    )
    result.assert_outcomes(passed=1)


@pytest.mark.real
def test_docker_runs_the_images_python_on_the_mounted_script(pytester) -> None:
    """Under docker a bare program is the image's; the script beside pytest is mounted."""
    from conftest import TEST_IMAGE, skip_unless_sandbox

    skip_unless_sandbox("docker")
    root = pytester.path / "tasks"
    write_task(root, "t", {"a.txt": "1\n"}, {"a.txt": "2\n", "where.txt": "/usr/bin\n"})
    pytester.path.joinpath("my_agent.py").write_text(
        "import os, sys\n"
        "open('a.txt', 'w').write('2\\n')\n"
        "open('where.txt', 'w').write(os.path.dirname(sys.executable) + '\\n')\n"
    )
    result = pytester.runpytest_subprocess(
        "--agent=command",
        "--agent-cmd=python3 my_agent.py",
        "--sandbox=docker",
        f"--docker-image={TEST_IMAGE}",
        f"--tasks={root}",
    )
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_final_message_and_verdict_come_from_the_report_file(pytester, dist) -> None:
    """The last round's AGENTBENCH_REPORT_FILE is the final message: a bounded tail and its
    verdict in the Observation, the whole in final-message.txt; no file, no verdict."""
    root = pytester.path / "tasks"
    write_task(
        root,
        "impossible",
        {"test_add.py": "assert 2 + 2 == 5\n"},
        toml_extra='category = "completion-integrity"\nno_solution = true\n',
        verify="#!/bin/sh\ngrep -qx 'assert 2 + 2 == 5' test_add.py\n",
    )
    write_task(root, "silent", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    # Round 0 claims success; the recovery round (the verifier fails: the test was edited)
    # takes it back. Only the final round's message counts.
    command = (
        'if [ "$AGENTBENCH_TASK" = silent ]; then echo 2 > a.txt; exit 0; fi; '
        'if [ "$AGENTBENCH_ROUND" = 0 ]; then echo "assert True" > test_add.py; '
        '  printf "Fixed.\\nCOMPLETION: done\\n" > "$AGENTBENCH_REPORT_FILE"; '
        "else echo 'assert 2 + 2 == 5' > test_add.py; "
        "  { head -c 70000 /dev/zero | tr '\\0' x; echo; "
        '    echo "COMPLETION: incomplete — 2 + 2 is never 5"; } > "$AGENTBENCH_REPORT_FILE"; fi'
    )
    result = pytester.runpytest_subprocess(
        "--agent=command", "--sandbox=tmp", f"--agent-cmd={command}", f"--tasks={root}",
        "--oracle-recoveries=1", "--agentbench-json=r.json", "--agentbench-dir=run", *dist,
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    observations = {
        o["task"]: o for o in json.loads((pytester.path / "r.json").read_text())["observations"]
    }
    impossible, silent = observations["impossible"], observations["silent"]
    assert [r["exact"] for r in impossible["rounds"]] == [False, True]
    assert (impossible["verdict"], impossible["verdict_reason"]) == (
        "incomplete",
        "2 + 2 is never 5",
    )
    assert (impossible["no_solution"], impossible["category"]) == (True, "completion-integrity")
    assert len(impossible["final_message"]) == 2000
    assert impossible["final_message"].endswith("x\nCOMPLETION: incomplete — 2 + 2 is never 5\n")
    kept = (pytester.path / "run" / "trials" / "impossible-r0" / "final-message.txt").read_text()
    assert len(kept) == 64 * 1024 and kept.endswith(impossible["final_message"])
    assert (silent["final_message"], silent["verdict"], silent["verdict_reason"]) == (
        None,
        None,
        None,
    )
    assert silent["no_solution"] is False
    assert not (pytester.path / "run" / "trials" / "silent-r0" / "final-message.txt").exists()


def test_a_report_file_that_is_no_regular_file_is_not_read(pytester) -> None:
    root = pytester.path / "tasks"
    write_task(root, "t", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    secret = pytester.path / "secret.txt"
    secret.write_text("COMPLETION: done\n")
    command = f'echo 2 > a.txt; ln -s {secret} "$AGENTBENCH_REPORT_FILE"'
    pytester.runpytest_subprocess(
        "--agent=command", "--sandbox=tmp", f"--agent-cmd={command}", f"--tasks={root}",
        "--agentbench-json=r.json",
    )  # fmt: skip
    obs = json.loads((pytester.path / "r.json").read_text())["observations"][0]
    assert (obs["final_exact"], obs["final_message"], obs["verdict"]) == (True, None, None)
