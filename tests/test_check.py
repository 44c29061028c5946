"""`agentbench check`: a broken study shows every planted problem, one line each; a sound one
is ready; nothing runs and nothing is written either way."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


def _task(root: Path, name: str, before: str, after: str) -> None:
    (root / name / "workspace").mkdir(parents=True)
    (root / name / "expected").mkdir()
    (root / name / "task.toml").write_text('prompt = "Write b in a.txt."\n')
    (root / name / "workspace" / "a.txt").write_text(before)
    (root / name / "expected" / "a.txt").write_text(after)


def check(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    done = subprocess.run(
        ["agentbench", "check", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout.splitlines()


@pytest.fixture
def study(tmp_path: Path) -> Path:
    _task(tmp_path / "bench", "sound", "a\n", "b\n")
    return tmp_path


def test_a_sound_study_is_ready_and_nothing_runs(study: Path) -> None:
    code, lines = check(study, "--agent=mock", "--tasks=bench", "--sandbox=tmp")
    assert code == 0, lines
    assert lines == ["# ready: agent mock (CLI builtin), sandbox tmp, 1 tasks"]
    assert sorted(p.name for p in study.iterdir()) == ["bench"]  # no run directory


def test_a_broken_study_shows_every_planted_problem(study: Path) -> None:
    _task(study / "bench", "no-change", "a\n", "a\n")  # an unsound task
    (study / "bench" / "typo").mkdir()
    (study / "bench" / "typo" / "task.toml").write_text('prompt = "x"\nprompts = "y"\n')
    arms = study / "arms.toml"
    arms.write_text('[arm.core]\nguidance = ["missing.md"]\n')  # a file that is not there
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    code, lines = check(
        study,
        "--agent=codex",
        "--agent-opt=bin=/bin/true",
        "--tasks=bench",
        "--sandbox=tmp",
        "--arms=arms.toml",
        env=env,
    )
    assert code == 1
    assert lines[-1] == "# not ready: 5 problems"
    problems = lines[:-1]
    assert len([line for line in problems if line.startswith("arms: --arms:")]) == 1
    assert "missing.md" in next(line for line in problems if line.startswith("arms:"))
    assert any(
        line.startswith("agent: --agent=codex: no credentials: set OPENAI_API_KEY")
        for line in problems
    )
    assert "task no-change: the expected tree equals the input tree" in "\n".join(problems)
    assert "task no-change: the pristine workspace passes" in "\n".join(problems)
    typo = next(line for line in problems if line.startswith("task typo:"))
    assert "does not load" in typo and "prompts" in typo


def test_a_missing_docker_image_and_no_agent_are_problems(study: Path) -> None:
    code, lines = check(study, "--tasks=bench")
    assert code == 1 and lines[0].startswith("options: --tasks, --agentbench-check need --agent")
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        pytest.skip("no Docker engine here: the missing-image check needs one")
    code, lines = check(
        study, "--agent=mock", "--tasks=bench", "--sandbox=docker", "--docker-image=nope:404"
    )
    assert code == 1
    assert lines[0].startswith("sandbox: --docker-image nope:404: no such image")


@pytest.fixture
def fake_codex(tmp_path: Path) -> Path:
    """A codex binary that only says its version, and an API key for it."""
    binary = tmp_path / "bin" / "codex"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\necho 'codex-cli 9.9.9'\n")
    binary.chmod(0o755)
    return binary


@pytest.mark.parametrize(
    ("pin", "expected"),
    [
        ([], "note: codex CLI 'codex-cli 9.9.9' is not "),
        (["--agent-opt=version=9.9.9"], "# ready: agent codex (CLI codex-cli 9.9.9)"),
        (["--agent-opt=version=0.1.0"], "agent: --agent-opt version=0.1.0: "),
    ],
    ids=["unpinned", "pinned", "other"],
)
def test_a_launch_pin_refuses_any_other_cli_version(
    study: Path, fake_codex: Path, pin: list[str], expected: str
) -> None:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    code, lines = check(
        study, "--agent=codex", f"--agent-opt=bin={fake_codex}", *pin, "--tasks=bench",
        "--sandbox=tmp", env=env,
    )  # fmt: skip
    assert lines[0].startswith(expected), lines
    assert code == (1 if pin == ["--agent-opt=version=0.1.0"] else 0)
    if code:
        assert "reports 'codex-cli 9.9.9'; install codex 0.1.0" in lines[0]


def test_the_header_warns_once_of_an_unpinned_untested_cli(
    pytester: pytest.Pytester, fake_codex: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    _task(pytester.path / "bench", "sound", "a\n", "b\n")
    args = ["--agent=codex", f"--agent-opt=bin={fake_codex}", "--tasks=bench", "--sandbox=tmp"]
    shown = pytester.runpytest_subprocess(*args, "--collect-only")
    warned = [line for line in shown.outlines if "the version this release is tested" in line]
    assert len(warned) == 1 and "pin the one you mean with --agent-opt version=X" in warned[0]
    pinned = pytester.runpytest_subprocess(*args, "--agent-opt=version=9.9.9", "--collect-only")
    assert not [line for line in pinned.outlines if "tested against" in line]
