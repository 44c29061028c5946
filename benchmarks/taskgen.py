"""Directory tasks made on the fly, so every benchmark knows exactly what it measures."""

from __future__ import annotations

from pathlib import Path

TASK_TOML = 'prompt = "Replace the word alpha with omega in file0.txt. Change nothing else."\n'


def _body(task: int, index: int, lines: int) -> str:
    return "".join(f"task {task} file {index} line {n} alpha\n" for n in range(lines))


def make_tasks(
    root: Path, count: int, *, files: int = 3, lines: int = 20, change: bool = True
) -> Path:
    """count tasks t0000, t0001 ... under root, each a workspace of `files` small text files.

    With change=True the expected tree differs from the input in file0.txt (a real edit);
    otherwise it equals the input, so an agent that does nothing ends exact.
    """
    root.mkdir(parents=True, exist_ok=True)
    for task in range(count):
        task_dir = root / f"t{task:04d}"
        (task_dir / "workspace" / "src").mkdir(parents=True, exist_ok=True)
        (task_dir / "expected" / "src").mkdir(parents=True, exist_ok=True)
        (task_dir / "task.toml").write_text(TASK_TOML)
        for index in range(files):
            rel = f"file{index}.txt" if index % 2 == 0 else f"src/file{index}.txt"
            text = _body(task, index, lines)
            (task_dir / "workspace" / rel).write_text(text)
            if change and index == 0:
                text = text.replace("alpha", "omega")
            (task_dir / "expected" / rel).write_text(text)
    return root
