"""The tmp sandbox: a fresh temp directory per trial. Fast, and no isolation at all."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

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

    def __init__(self, root: Path, home_parent: str | None) -> None:
        self._lay_out(root, str(root / "workspace"), None, home_parent)

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
        self._remove_files_later()


class TmpProvider(SandboxProvider):
    kind = "tmp"

    def __init__(self, home_parent: str | None, fallback_reason: str | None = None) -> None:
        self.home_parent = home_parent  # a memory-backed directory for the agents' homes
        self.fallback_reason = fallback_reason  # why --sandbox=auto could not isolate

    def create(self, task: Task, trial_id: str) -> Sandbox:
        sandbox = TmpSandbox(make_trial_root(trial_id, self.root_parent), self.home_parent)
        materialize(task.input_tree, sandbox.workspace)
        return sandbox

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.placement()}

    def process_limits_off(self) -> str | None:
        return "the tmp sandbox runs agents as plain child processes"

    def warning(self) -> str | None:
        why = f" (auto: {self.fallback_reason})" if self.fallback_reason else ""
        return f"sandbox tmp: the agent is NOT isolated (it can read the whole machine){why}"
