"""The offline commands the docs show run as written.

Convention: every line of a code block in README.md or docs/*.md (fenced or indented, a YAML
`- run:` item included) that starts `pytest --agent=mock|oracle|nop` or `agentbench
list|validate|check|report|retrace|merge|compare` is run, in a scratch directory where the
paths the docs use exist (`path/to/tasks`, `.agentbench/runs/ID`, `base/`, `cand/`, the CI
recipes' shard directories and baseline, `gates.toml` as docs/ci.md shows it, docs/examples,
and `RUN_DIR`, a run with arms). A pytest command that
selects the whole bundled suite gets `-k replace-version` and at most 2 repeats, to stay fast.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_tasks import make_tasks

pytestmark = pytest.mark.docs

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OFFLINE = re.compile(
    r"^(pytest --agent=(mock|oracle|nop)\b"
    r"|agentbench (list|validate|check|report|retrace|merge|compare)\b)"
)
BIN = Path(sys.executable).parent


def code_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of every line in a fenced or indented code block, with shell
    continuations joined and YAML list prefixes dropped."""
    found: list[tuple[int, str]] = []
    fenced = False
    pending: tuple[int, str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not (fenced or line.startswith("    ")):
            pending = None
            continue
        stripped = re.sub(r"^(- run:|-)\s+", "", line.strip())
        if pending is not None:
            number, stripped = pending[0], f"{pending[1]} {stripped}"
        if stripped.endswith("\\"):
            pending = (number, stripped[:-1].rstrip())
            continue
        pending = None
        found.append((number, stripped))
    return found


def documented_commands() -> list[tuple[str, str]]:
    """(where, command) for every offline command the docs show, in document order."""
    commands = []
    for doc in DOCS:
        for number, line in code_lines(doc.read_text(encoding="utf-8")):
            for part in line.split("&&"):
                command = re.sub(r"\s+#.*$", "", part).strip()
                if OFFLINE.match(command):
                    commands.append((f"{doc.relative_to(ROOT)}:{number}", command))
    return commands


def made_small(command: str) -> str:
    """A pytest command over the whole bundled suite, cut to one task and at most 2 repeats."""
    if not command.startswith("pytest"):
        return command
    command = re.sub(r"--repeats[= ](\d+)", lambda m: f"--repeats={min(2, int(m[1]))}", command)
    words = command.split()
    selects = any(w.startswith(("-k", "--tasks")) or not w.startswith("-") for w in words[1:])
    return command if selects else f"{command} -k replace-version"


def gates_example() -> str:
    """The gates file docs/ci.md shows."""
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    match = re.search(r"```toml\n# gates.toml\n(.*?)```", text, re.S)
    assert match, "docs/ci.md has no ```toml block starting '# gates.toml'"
    return match[1]


def sh(cwd: Path, command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    return subprocess.run(
        ["/bin/sh", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory where every path the docs' commands name exists."""
    root = tmp_path_factory.mktemp("docs")
    tasks = make_tasks(root, 6)
    shutil.copytree(tasks, root / "path" / "to" / "tasks")
    shutil.copytree(tasks, root / "tasks")
    shutil.copytree(ROOT / "docs" / "examples", root / "docs" / "examples")
    mock = f"pytest -p no:cacheprovider --agent=mock --sandbox=tmp --tasks={tasks} --repeats=2"
    setup = [
        f"{mock} --agentbench-dir=.agentbench/runs/ID --agentbench-json=run.json",
        f"{mock} --agentbench-dir=cand --agentbench-seed=2",
        "cp -R .agentbench/runs/ID base",
        f"{mock} --agentbench-shard=1/2 --agentbench-dir=runs/run-shard-1",
        f"{mock} --agentbench-shard=2/2 --agentbench-dir=runs/run-shard-2",
        "mkdir -p bench && agentbench merge base -o bench/baseline.json",
        # what a documented command makes for the next one: under xdist they run apart
        "agentbench merge runs/run-shard-* -o merged.json",
        f"{mock} --arms=docs/examples/arms.toml --agentbench-dir=RUN_DIR",
    ]
    for command in setup:
        result = sh(root, command)
        assert result.returncode in (0, 1), f"{command}\n{result.stdout}\n{result.stderr}"
    for index in (1, 2):
        shutil.copytree(root / f"runs/run-shard-{index}", root / f"runs/shard-{index}")
    shutil.copy(root / "bench" / "baseline.json", root / "baseline.json")
    (root / "gates.toml").write_text(gates_example())
    return root


COMMANDS = documented_commands()


def test_the_docs_show_offline_commands() -> None:
    """The extraction itself works: the README's first command and the CI recipes are found."""
    commands = [command for _, command in COMMANDS]
    assert "pytest --agent=mock --repeats=5" in commands
    assert any(c.startswith("agentbench compare") and "--gates" in c for c in commands)
    assert len(commands) >= 10


@pytest.mark.parametrize(("where", "command"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_documented_command_runs(scratch: Path, where: str, command: str) -> None:
    result = sh(scratch, made_small(command))
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    if command.startswith("pytest"):
        ok = result.returncode in (0, 1)  # 1: some trials were not exact, an outcome
    elif command.startswith("agentbench compare") and "--gates" in command:
        ok = result.returncode in (0, 1, 3) and "\ngates: " in result.stdout
        ok = ok and not result.stderr  # 3 is "undetermined"; 2, unusable input, never
    else:
        ok = result.returncode == 0
    assert ok, f"{where}: {command} exited {result.returncode}\n{output[-3000:]}"
