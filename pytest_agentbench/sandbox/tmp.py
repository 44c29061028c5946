"""The tmp sandbox: a fresh temp directory per trial. Fast, and no isolation at all."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_agentbench.filework import remove_later
from pytest_agentbench.sandbox.base import (
    ProcessResult,
    Sandbox,
    SandboxProvider,
    make_trial_root,
    run_process_group,
)
from pytest_agentbench.tasks.model import Task, materialize


class TmpSandbox(Sandbox):
    """The agent runs as a plain child process with its cwd in a temp copy of the input tree."""

    kind = "tmp"

    def __init__(self, root: Path) -> None:
        self._lay_out(root, str(root / "workspace"), str(root / "home"))

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        timeout: float,
        cwd: str | None = None,
    ) -> ProcessResult:
        self.make_home()  # the process's HOME
        return run_process_group(argv, env=env, cwd=cwd or self.inner_workspace, timeout=timeout)

    def close(self) -> None:
        remove_later(self.root)


class TmpProvider(SandboxProvider):
    kind = "tmp"

    def __init__(self, fallback_reason: str | None = None) -> None:
        self.fallback_reason = fallback_reason  # why --sandbox=auto could not isolate

    def create(self, task: Task, trial_id: str) -> Sandbox:
        sandbox = TmpSandbox(make_trial_root(trial_id))
        materialize(task.input_tree, sandbox.workspace)
        return sandbox

    def warning(self) -> str | None:
        why = f" (auto: {self.fallback_reason})" if self.fallback_reason else ""
        return f"sandbox tmp: the agent is NOT isolated (it can read the whole machine){why}"
