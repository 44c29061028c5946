"""Resolving a --agent-cmd: which words are programs and scripts, and what a sandbox must show."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.agents.command_line import ResolvedCommand, resolve_command, split_words


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """An invocation directory holding an agent script, a python link and a shell tool."""
    (tmp_path / "my_agent.py").write_text("print('hi')\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    tool = bin_dir / "tool.sh"
    tool.write_text("#!/bin/sh\necho tool\n")
    tool.chmod(0o755)
    return tmp_path


def resolve(command: str, base: Path, *, host: bool = True) -> ResolvedCommand:
    environ = {**os.environ, "PATH": f"{base / 'bin'}:/usr/bin:/bin"}
    return resolve_command(command, base, environ, host_programs=host, hidden=[base])


def test_the_readme_command_names_the_interpreter_and_the_script(base: Path) -> None:
    resolved = resolve("python my_agent.py --fast", base)
    interpreter = Path(sys.executable).resolve()
    program, script, flag = resolved.text.split(" ")
    assert Path(program).resolve() == interpreter and not program.startswith(str(base))
    assert (script, flag) == (str(base / "my_agent.py"), "--fast")
    assert base / "my_agent.py" in resolved.exposures
    shown = [p for p in resolved.exposures if p != base / "my_agent.py"]
    if not str(interpreter).startswith(("/usr/", "/bin/")):  # else the runtime shows it
        assert any(p == interpreter or p in interpreter.parents for p in shown)
    assert all(base not in p.parents and p != base for p in shown)


def test_a_script_beside_the_tasks_is_shown_alone(base: Path) -> None:
    resolved = resolve("bin/tool.sh && echo 2 > a.txt", base)
    assert resolved.text == f"{base / 'bin' / 'tool.sh'} && echo 2 > a.txt"
    assert resolved.exposures == [base / "bin" / "tool.sh"]  # /bin/sh is the runtime's


@pytest.mark.parametrize(
    "command",
    [
        "echo 2 > my_agent.py",  # a redirection target is the workspace's
        "cat my_agent.py",  # an ordinary argument is the workspace's
        "python -c 'print(1)' my_agent.py",  # code, then an argument
        "python3 - <<'EOF'\nmy_agent.py\nEOF",  # a here-document is data
        'sh -c "python my_agent.py"',  # quoted words are the shell's
        "$PY my_agent.py",  # an expansion is the shell's
    ],
)
def test_words_that_are_not_scripts_are_left_alone(base: Path, command: str) -> None:
    resolved = resolve(command, base)
    assert "my_agent.py" in resolved.text and str(base / "my_agent.py") not in resolved.text


@pytest.mark.parametrize("host", [True, False], ids=["host", "docker"])
def test_a_shell_command_in_single_quotes_is_resolved_like_a_command(
    base: Path, host: bool
) -> None:
    resolved = resolve(
        "bash -c 'bin/tool.sh --go; python3 ./nope.py' && echo 2 > a.txt", base, host=host
    )
    tool = base / "bin" / "tool.sh"
    assert resolved.text.startswith(f"bash -c '{tool} --go; ")
    assert resolved.text.endswith(" ./nope.py' && echo 2 > a.txt")
    assert tool in resolved.exposures and all(
        base not in p.parents for p in resolved.exposures if p != tool
    )
    assert resolved.unresolved == ["./nope.py"]  # perhaps the workspace's own, as outside quotes


def test_under_docker_bare_programs_are_the_images(base: Path) -> None:
    resolved = resolve("python3 my_agent.py; /usr/bin/env true", base, host=False)
    assert resolved.text == f"python3 {base / 'my_agent.py'}; /usr/bin/env true"
    assert resolved.exposures == [base / "my_agent.py"]


@given(st.text(alphabet="ab =;|&<>'\"\\$\n-./", max_size=40))
def test_words_lie_inside_the_command_in_order(command: str) -> None:
    words = split_words(command)
    assert [w.start for w in words] == sorted(w.start for w in words)
    for word in words:
        assert command[word.start : word.end] == word.text and word.text.strip()
    for word in words:
        if word.plain:
            assert not set(word.text) & set("'\"\\$ ;|&<>\n")


@pytest.mark.parametrize(
    ("command", "missing"),
    [
        ("no-such-agent --fast", ["no-such-agent"]),
        ("cd sub && no-such-agent; tool.sh", ["no-such-agent"]),
        ("tool.sh && echo 2 > a.txt && test -f a.txt", []),  # the shell's own are not looked up
        ("./solve.sh", []),  # perhaps the workspace's: the shell will say
        ("f() { true; }; f", []),  # a function the command defines
        ("PATH=./bin:$PATH no-such-agent", []),  # a PATH the command changes
    ],
)
def test_programs_not_on_path_are_named(base: Path, command: str, missing: list[str]) -> None:
    assert resolve(command, base).missing == missing


def test_under_docker_programs_are_not_looked_up(base: Path) -> None:
    assert resolve("no-such-agent", base, host=False).missing == []


@pytest.mark.parametrize("command", ["echo boom >&2; true", "tool.sh 2>&1 | cat", "true &>log"])
def test_redirections_to_descriptors_are_not_programs(base: Path, command: str) -> None:
    assert resolve(command, base).missing == []


def test_a_module_from_here_is_shown_with_the_directory_python_finds_it_in(base: Path) -> None:
    (base / "agentpkg").mkdir()
    (base / "agentpkg" / "__main__.py").write_text("print('hi')\n")
    resolved = resolve("python -m agentpkg --fast", base)
    assert resolved.text.endswith(" -m agentpkg --fast")
    assert base / "agentpkg" in resolved.exposures and base not in resolved.exposures
    assert resolved.python_path == [str(base)]
    assert resolve("python -m json.tool", base).python_path == []  # the interpreter's own


@pytest.mark.parametrize(
    ("command", "unresolved"),
    [
        ("./nope.sh", ["./nope.sh"]),
        ("python3 my_agnt.py --fast", ["my_agnt.py"]),
        ("sh tools/run && bin/tool.sh", ["tools/run"]),
        ("python my_agent.py", []),  # found here
        ("bun run dev", []),  # a subcommand, not a file
        ("python /opt/agent.py; /opt/agent", []),  # absolute: the sandbox's, not looked up
    ],
)
def test_relative_paths_not_found_here_are_listed(
    base: Path, command: str, unresolved: list[str]
) -> None:
    assert resolve(command, base).unresolved == unresolved
