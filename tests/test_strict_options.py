"""Options and ini keys that would be read as nothing are usage errors, exit 4, one line.

A misspelt agentbench ini key (pytest only warns) names the ini file, its line, the key and
the key meant, when --agent is given; a plain pytest run of a project whose ini sets
agentbench keys is left alone. agentbench options given without --agent (the plugin is then
off) name themselves, except --agentbench-resume, which brings its own agent.
"""

from __future__ import annotations

import pytest

from conftest import one_error_line, write_task

DISTS = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist")]
TYPO = "agentbench_repeat = 2"
MEANT = "(did you mean `agentbench_repeats`?)"
# (ini file, its text with the misspelt key on line 3)
INI_FILES = {
    "pytest.ini": f"[pytest]\nagentbench_keep = none\n{TYPO}\n",
    "tox.ini": f"[tox]\n[pytest]\n{TYPO}\n",
    "setup.cfg": f"[metadata]\n[tool:pytest]\n{TYPO}\n",
    "pyproject.toml": f'[project]\n[tool.pytest.ini_options]\n{TYPO}\nagentbench_keep = "none"\n',
}


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """One ordinary test beside one task."""
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    write_task(pytester.path / "tasks", "t1", {"a.txt": "1\n"}, {"a.txt": "2\n"})
    return pytester


@pytest.mark.parametrize("name", list(INI_FILES))
def test_a_misspelt_ini_key_names_the_file_line_and_key_meant(
    project: pytest.Pytester, name: str
) -> None:
    (project.path / name).write_text(INI_FILES[name])
    result = project.runpytest_subprocess("--agent=oracle", "--tasks=tasks")
    one_error_line(
        result,
        f"ERROR: {project.path / name}:3: unknown ini key `agentbench_repeat` {MEANT}; "
        "pytest --help lists the agentbench_* ini keys",
    )


@pytest.mark.parametrize("name", list(INI_FILES))
def test_without_agent_the_ini_keys_are_left_alone(project: pytest.Pytester, name: str) -> None:
    (project.path / name).write_text(INI_FILES[name])
    result = project.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.no_fnmatch_line("agentbench:*")  # the plugin stayed off


def test_a_misspelt_override_is_named_as_given(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "--agent=oracle", "--tasks=tasks", "-o", "agentbench_sandbx=tmp"
    )
    one_error_line(
        result,
        "ERROR: -o: unknown ini key `agentbench_sandbx` (did you mean `agentbench_sandbox`?)*",
    )


@pytest.mark.parametrize("dist", DISTS)
def test_options_without_agent_say_they_need_it(project: pytest.Pytester, dist: list[str]) -> None:
    result = project.runpytest_subprocess("--repeats=3", "--tasks=mytasks", *dist)
    one_error_line(
        result,
        "ERROR: --repeats, --tasks need --agent: name the agent to benchmark (for example "
        "--agent=mock), or drop them; without --agent only ordinary tests run",
    )
    result = project.runpytest_subprocess("--sandbox=tmp", *dist)
    one_error_line(result, "ERROR: --sandbox needs --agent: *, or drop it; *")


def test_resume_brings_its_own_agent_and_ini_defaults_need_none(
    project: pytest.Pytester,
) -> None:
    project.makeini("[pytest]\nagentbench_repeats = 3\nagentbench_sandbox = tmp\n")
    result = project.runpytest_subprocess("--agentbench-resume=run", "--repeats=3")
    result.stderr.no_re_match_line(r".*needs? --agent:")
    plain = project.runpytest_subprocess()
    plain.assert_outcomes(passed=1)
    assert plain.ret == pytest.ExitCode.OK
    plain.stdout.no_fnmatch_line("agentbench:*")
    plain.stderr.no_fnmatch_line("*ERROR*")
