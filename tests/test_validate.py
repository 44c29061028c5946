"""agentbench validate on directory tasks: sound ones pass, unsound ones are named."""

from __future__ import annotations

from pathlib import Path

from pytest_agentbench.tasks.directory import find_task_dirs, unknown_entries
from pytest_agentbench.tasks.sources import bundled_tasks_dir
from pytest_agentbench.tasks.validate import validate


def _task(root: Path, name: str, before: str, after: str) -> None:
    (root / name / "workspace").mkdir(parents=True)
    (root / name / "expected").mkdir()
    (root / name / "task.toml").write_text('prompt = "Write b in a.txt."\n')
    (root / name / "workspace" / "a.txt").write_text(before)
    (root / name / "expected" / "a.txt").write_text(after)


def test_sound_and_unsound_directory_tasks(tmp_path):
    _task(tmp_path, "sound", "a\n", "b\n")
    _task(tmp_path, "no-change", "a\n", "a\n")
    verdicts = {v.task_id: v.problems for v in validate((str(tmp_path),), tmp_path)}
    assert verdicts["sound"] == []
    assert verdicts["no-change"] == [
        "the expected tree equals the input tree: the task needs no change",
        "the pristine workspace passes: the task tests nothing",
    ]


def test_a_task_that_does_not_load_is_reported(tmp_path):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "task.toml").write_text("prompt = 3\n")
    (verdict,) = validate((str(tmp_path),), tmp_path)
    assert verdict.task_id == "broken"
    assert verdict.problems and verdict.problems[0].startswith("does not load:")


def test_a_stray_file_in_a_task_directory_is_reported(tmp_path):
    _task(tmp_path, "stray", "a\n", "b\n")
    (tmp_path / "stray" / "task.toml.bak").write_text("old\n")
    (verdict,) = validate((str(tmp_path),), tmp_path)
    assert len(verdict.problems) == 1
    assert verdict.problems[0].startswith("unknown entry 'task.toml.bak' in the task directory")


def test_bundled_tasks_hold_only_known_entries():
    """Whatever sits in tasks/ ships in the wheel (it is force-included whole)."""
    tasks = find_task_dirs(bundled_tasks_dir())
    assert tasks
    assert {task.name: unknown_entries(task) for task in tasks if unknown_entries(task)} == {}
