"""agentbench validate on directory tasks: sound ones pass, unsound ones are named."""

from __future__ import annotations

from pathlib import Path

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
