"""One trial as the viewer's trial page shows it (`trial/<C>/<I>`): the Observation, the
prompt, the trajectory's steps, the artifacts its folder holds (diff, failure report, verifier
output, output tails) and the requests the meter saw, each bounded so that one page stays
light whatever an agent wrote."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from pytest_agentbench.agents.receipts import TREATMENT_FILE
from pytest_agentbench.tasks.observation import Observation
from pytest_agentbench.trajectory.build import json_lines
from pytest_agentbench.trajectory.raw import ARCHIVE, read_archive
from pytest_agentbench.trajectory.summary import TRAJECTORY_FILE
from pytest_agentbench.trial.artifacts import FAILURE_FILE
from pytest_agentbench.view.payloads import outcome_letter

TEXT_LIMIT = 256 * 1024  # characters of one artifact shown; the file itself holds the rest
RESULT_LIMIT = 4000  # characters of one tool result or message in a step
STEP_LIMIT = 2000  # steps shown of one trial
REQUEST_FIELDS = (  # of the meter's request records (meter/server.py)
    *("index", "path", "protocol", "status", "injected", "latency_s", "usage"),
    *("failure", "duration_s"),
)
TEXT_ARTIFACTS = {  # payload field -> artifact file
    "diff": "diff.patch",
    "failure": FAILURE_FILE,
    "verifier": "verifier.txt",
    "stdout": "stdout.txt",
    "stderr": "stderr.txt",
    "final_message": "final-message.txt",
    "infrastructure": "infrastructure.txt",
    "treatment": TREATMENT_FILE,
}


def _cut(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"\n... ({len(text) - limit} more characters in the file)"


def _read_text(path: Path, limit: int = TEXT_LIMIT) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(limit + 1)
    except OSError:
        return None
    return _cut(text, limit)


def _shown(value: Any) -> str | None:
    """A tool's result or argument as text, however the CLI shaped it."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=1)


def _step(step: dict[str, Any]) -> dict[str, Any]:
    """One ATIF step, flattened for the page: its calls joined to their results and kinds."""
    extra = step.get("extra") or {}
    results = {
        r.get("source_call_id"): r.get("content")
        for r in (step.get("observation") or {}).get("results") or []
        if isinstance(r, dict)
    }
    facts = {c.get("tool_call_id"): c for c in extra.get("tool_calls") or [] if isinstance(c, dict)}
    calls = []
    for call in step.get("tool_calls") or []:
        call_id = call.get("tool_call_id")
        fact = facts.get(call_id) or {}
        calls.append(
            {
                "id": call_id,
                "name": call.get("function_name"),
                "kind": fact.get("kind"),
                "arguments": _cut(_shown(call.get("arguments")), RESULT_LIMIT),
                "result": _cut(_shown(results.get(call_id)), RESULT_LIMIT),
                "exit_code": fact.get("exit_code"),
            }
        )
    metrics = step.get("metrics") or {}
    metric_extra = metrics.get("extra") or {}
    tokens = None
    if metrics:
        tokens = {
            "prompt": metrics.get("prompt_tokens"),
            "completion": metrics.get("completion_tokens"),
            "cached": metrics.get("cached_tokens"),
            "reasoning": metric_extra.get("reasoning_tokens"),
        }
    return {
        "id": step.get("step_id"),
        "source": step.get("source"),
        "message": _cut(_shown(step.get("message")), RESULT_LIMIT),
        "reasoning": _cut(_shown(step.get("reasoning_content")), RESULT_LIMIT),
        "tool_calls": calls,
        "tokens": tokens,
        "latency_s": metric_extra.get("latency_s"),
        "attempt": extra.get("attempt"),
        "round": extra.get("round"),
        "side": bool(extra.get("side")),
    }


def _steps(folder: Path | None) -> tuple[list[dict[str, Any]], int, str | None]:
    """(steps, how many were left out, the first user message: the prompt)."""
    if folder is None:
        return [], 0, None
    try:
        trajectory = json.loads((folder / TRAJECTORY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [], 0, None
    steps = [s for s in trajectory.get("steps") or [] if isinstance(s, dict)]
    prompt = next((s.get("message") for s in steps if s.get("source") == "user"), None)
    return [_step(s) for s in steps[:STEP_LIMIT]], max(len(steps) - STEP_LIMIT, 0), prompt


def _requests(folder: Path | None) -> list[dict[str, Any]]:
    """The metered requests of every round, from the wire stream of the raw evidence."""
    if folder is None:
        return []
    try:
        evidence = read_archive((folder / ARCHIVE).read_bytes())
    except OSError:
        return []
    requests = []
    for evidence_round in evidence.rounds:
        for record in json_lines(evidence_round.streams.get("wire", "")):
            requests.append(
                {
                    "attempt": evidence_round.attempt,
                    "round": evidence_round.round,
                    **{name: record.get(name) for name in REQUEST_FIELDS},
                }
            )
    return requests


def _artifacts(folder: Path | None) -> list[dict[str, Any]]:
    if folder is None:
        return []
    return [
        {"name": str(path.relative_to(folder)), "size": path.stat().st_size}
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    ]


def rerun_command(nodeid: str | None, run: dict[str, Any]) -> str | None:
    """The command that reruns one trial: its node id and the run's agent options."""
    if not nodeid:
        return None
    words = ["pytest", nodeid, f"--agent={run.get('agent')}"]
    if run.get("model"):
        words.append(f"--model={run['model']}")
    return shlex.join(words)


def trial(
    key: str, index: int, observation: Observation, folder: Path | None, run: dict[str, Any]
) -> dict[str, Any]:
    """The trial page's payload: trial INDEX of configuration KEY, its folder of artifacts
    (None: not at hand) and its configuration's run block."""
    steps, steps_cut, prompt = _steps(folder)
    nodeid = observation.get("nodeid")
    return {
        "key": key,
        "index": index,
        "task": observation["task"],
        "repeat": observation["repeat"],
        "arm": observation.get("arm"),
        "nodeid": nodeid,
        "rerun": rerun_command(nodeid, run),
        "outcome": outcome_letter(observation),
        "status": observation["status"],
        "prompt": prompt,
        "observation": observation,
        "rounds": observation.get("rounds") or [],
        "steps": steps,
        "steps_cut": steps_cut,
        **{
            field: _read_text(folder / name) if folder else None
            for field, name in TEXT_ARTIFACTS.items()
        },
        "requests": _requests(folder),
        "artifacts": _artifacts(folder),
        "folder": str(folder) if folder else None,
    }
