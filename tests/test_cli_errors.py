"""Bad input to the `agentbench` console script is one line naming the file or argument and the
fix, exit 2, never a traceback: run as users run it, through the installed script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_task

SCRIPT = Path(sys.executable).parent / "agentbench"
GATE = '[[gate]]\nmetric = "first_exact"\nbound = "lower"\nmargin = -0.05\n'


def agentbench(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


BAD_LIMITS = '{"identity": {}, "settings": {"agent": "mock", "sandbox_limits": {"x": 1}}}'
REPORT = '{"run": {}, "summary": {}, "tasks": [], "observations": []}'
RUN_JSON = '{"identity": {}, "settings": {"agent": "mock"}}'

# (argv, files to lay out first, text the one-line error must hold)
BAD_INPUT = {
    "list-missing-dir": (["list", "--tasks", "nowhere"], {}, "--tasks nowhere: "),
    "list-unknown-suite": (["list", "--tasks", "builtin:nope"], {}, "unknown built-in suite"),
    "list-no-tasks": (["list", "--tasks", "empty"], {"empty/README": "x"}, "no tasks found"),
    "validate-missing-dir": (["validate", "--tasks", "nowhere"], {}, "--tasks nowhere: "),
    "validate-unknown-suite": (["validate", "--tasks", "builtin:nope"], {}, "builtin:nope"),
    "report-missing": (["report", "nowhere"], {}, "nowhere: no such run directory or report"),
    "report-not-a-run-dir": (["report", "d"], {"d/x.txt": "x"}, "d: not a run directory"),
    "report-run-json-malformed": (["report", "d"], {"d/run.json": "{nope"}, "d/run.json: not"),
    "report-run-json-list": (["report", "d"], {"d/run.json": "[1]"}, "d/run.json: not a run"),
    "report-observation-malformed": (
        ["report", "d"],
        {"d/run.json": RUN_JSON, "d/observations.jsonl": '{"task": "a", "repeat": 0}\n{x\n'},
        "d/observations.jsonl:2: not a JSON line",
    ),
    "report-observation-not-object": (
        ["report", "d"],
        {"d/run.json": RUN_JSON, "d/observations.jsonl": "[1, 2]\n"},
        "d/observations.jsonl:1: not an Observation",
    ),
    "report-json-malformed": (["report", "r.json"], {"r.json": "{"}, "r.json: not a JSON report"),
    "report-json-not-utf8": (["report", "r.json"], {"r.json": b"\xff\xfe"}, "not UTF-8"),
    "report-json-wrong-shape": (["report", "r.json"], {"r.json": "[1]"}, "r.json: not a pytest"),
    "report-json-missing-sections": (["report", "r.json"], {"r.json": "{}"}, "no 'run'"),
    "report-json-incomplete": (["report", "r.json"], {"r.json": REPORT}, "not a complete"),
    "report-settings-missing": (
        ["report", "d"],
        {"d/run.json": '{"identity": {}, "settings": 1}'},
        "d/run.json: 'settings' is not",
    ),
    "report-settings-unusable": (
        ["report", "d"],
        {"d/run.json": BAD_LIMITS},
        "d/run.json: recorded 'settings' are not usable",
    ),
    "report-output-unwritable": (
        ["report", "d", "-o", "d/run.json/out.html"],
        {"d/run.json": RUN_JSON},
        "-o d/run.json/out.html: cannot write it",
    ),
    "merge-missing": (["merge", "nowhere", "-o", "m.json"], {}, "nowhere: no such run"),
    "merge-wrong-shape": (["merge", "r.json", "-o", "m.json"], {"r.json": "[]"}, "r.json: not"),
    "compare-missing": (["compare", "a", "b"], {}, "a: no such run directory or report"),
    "compare-gates-missing": (
        ["compare", "a", "b", "--gates", "gates.toml"],
        {},
        "--gates gates.toml: cannot read it",
    ),
    "compare-gates-unreadable": (
        ["compare", "a", "b", "--gates", "g"],
        {"g/gates.toml": GATE},
        "--gates g: cannot read it (Is a directory)",
    ),
    "compare-gates-malformed": (
        ["compare", "a", "b", "--gates", "gates.toml"],
        {"gates.toml": "gate = [1]"},
        "gates.toml: no [[gate]] tables",
    ),
    "compare-gates-unknown-key": (
        ["compare", "a", "b", "--gates", "gates.toml"],
        {"gates.toml": GATE + 'outcom = "final_exact"\n'},
        "gates.toml:5: unknown key `outcom` in gate 1 (unnamed) (did you mean `outcome`?)",
    ),
    "compare-require-same-unknown": (
        ["compare", "a", "b", "--require-same", "model,modle"],
        {},
        "--require-same model,modle: unknown field modle; give a comma-separated list of agent,",
    ),
}


@pytest.mark.parametrize(
    ("argv", "files", "message"), list(BAD_INPUT.values()), ids=list(BAD_INPUT)
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, argv: list[str], files: dict[str, str | bytes], message: str
) -> None:
    write_files(tmp_path, files)
    result = agentbench(tmp_path, *argv)
    assert "Traceback" not in result.stdout + result.stderr
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"agentbench {argv[0]}: ")
    assert message in lines[0]


def test_usage_error_of_argparse_is_exit_2(tmp_path: Path) -> None:
    result = agentbench(tmp_path, "report")
    assert result.returncode == 2
    assert "the following arguments are required: report" in result.stderr


def test_list_counts_every_row_and_says_why_it_fails(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    write_task(tasks, "good", {"a.txt": "x\n"}, {"a.txt": "y\n"})
    write_task(tasks, "broken", {"a.txt": "x\n"}, {"a.txt": "y\n"}, toml_extra="timeout = 'no'\n")
    result = agentbench(tmp_path, "list", "--tasks", "tasks")
    assert "Traceback" not in result.stdout + result.stderr
    assert result.returncode == 1
    rows = [line for line in result.stdout.splitlines() if not line.startswith("#")]
    assert [row.split("\t")[:2] for row in rows] == [["broken", "BROKEN"], ["good", "-"]]
    summary = [line for line in result.stdout.splitlines() if line.startswith("#")]
    assert summary[0].startswith("# 2 rows: 1 task loaded, 1 broken; task-set hash")
    assert summary[1].startswith("# exit 1: 1 task could not be loaded (BROKEN rows above)")


def test_list_of_sound_tasks_counts_them_and_exits_0(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    for name in ("one", "two"):
        write_task(tasks, name, {"a.txt": "x\n"}, {"a.txt": "y\n"})
    result = agentbench(tmp_path, "list", "--tasks", "tasks")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("# 2 tasks, task-set hash ")
