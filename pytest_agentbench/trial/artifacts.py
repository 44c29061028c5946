"""A trial's artifacts: agent output tails and the final diff against the input, scrubbed.

They are made on the process that ran the trial and travel on the test report (apart from the
Observation, which stays lean) to the controller, which writes them under the run directory.
Secrets are scrubbed before anything leaves the worker.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from pytest_agentbench.agents.base import RoundResult
from pytest_agentbench.fs import names
from pytest_agentbench.grading.diffview import shown_prefix, tree_prefix, workspace_prefix
from pytest_agentbench.grading.grade import compare_tree
from pytest_agentbench.grading.similarity import DIFF_CUT
from pytest_agentbench.tasks.model import Tree

REPORT_ATTRIBUTE = "agentbench_artifacts"
TRIALS_DIR = "trials"  # in the run directory: one folder of artifacts per trial
FAILURE_FILE = "failure.txt"  # a failed trial's failure report, as the terminal shows it
CHANGE_FILE = "change.patch"  # the trial's whole change, up to --agentbench-change-limit
DIFF_LIMIT = 64 * 1024
FILE_LIMIT = 256 * 1024
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
MIN_SECRET_LENGTH = 8
# Each token shape with the case-folded words one of which any match must contain: a text holding
# none of them skips that expression (a scan of a long agent log per expression adds up).
SECRET_PATTERNS = (
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), ("sk-",)),  # OpenAI / Anthropic style keys
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), ("xox",)),  # Slack tokens
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), ("akia",)),  # AWS access key ids
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{12,}"), ("bearer",)),
    (
        re.compile(
            r"(?i)\b((?:api[_-]?key|access[_-]?token|secret|password|token)[\"']?\s*[:=]\s*[\"']?)"
            r"[^\s\"',;]{8,}"
        ),
        ("key", "token", "secret", "password"),
    ),
)


def trial_dir_name(task_id: str, repeat: int) -> str:
    """The trial's folder under TRIALS_DIR: its task id made safe as a file name, and the
    repeat."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in task_id)
    return f"{safe}-r{repeat}"


def secret_variables(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(name, value) of the secret-looking environment variables, longest value first."""
    env = os.environ if environ is None else environ
    found = [
        (name, value)
        for name, value in env.items()
        if len(value) >= MIN_SECRET_LENGTH and SECRET_NAME.search(name)
    ]
    return sorted(found, key=lambda kv: -len(kv[1]))


def scrub(
    text: str,
    environ: Mapping[str, str] | None = None,
    *,
    secrets: list[tuple[str, str]] | None = None,
) -> str:
    """Replace the values of secret-looking environment variables and known token shapes.

    ``secrets`` (from secret_variables) spares reading the environment once per text.
    """
    if not text:
        return text
    for name, value in secret_variables(environ) if secrets is None else secrets:
        if value in text:
            text = text.replace(value, f"[scrubbed:{name}]")
    folded = text.casefold()  # folds as re.IGNORECASE does (KELVIN SIGN is k, LONG S is s)
    for pattern, words in SECRET_PATTERNS:
        if any(word in folded for word in words):
            text = pattern.sub(
                lambda m: (m.group(1) if m.re.groups else "") + "[scrubbed]",
                text,
            )
    return text


def _text_lines(data: bytes) -> list[str] | None:
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace").splitlines(keepends=True)


def _file_diff(shown: str, before: bytes | None, after: bytes | None) -> list[str]:
    old = _text_lines(before) if before is not None else []
    new = _text_lines(after) if after is not None else []
    if old is None or new is None:
        return [f"Binary file {shown} changed\n"]
    lines = difflib.unified_diff(
        old,
        new,
        fromfile=f"a/{shown}" if before is not None else "/dev/null",
        tofile=f"b/{shown}" if after is not None else "/dev/null",
    )
    return [
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    ]


def _entry_diff(
    input_tree: Tree, workspace: Path, rel: str, kind: str, file_limit: int
) -> list[str]:
    """The diff lines of one changed, deleted or created entry (rel encoded), each file read
    up to file_limit only."""
    shown = names.show(rel)
    if rel.endswith("/"):
        return [f"Only in workspace: {shown}\n"]
    notes = []
    before = after = None
    if kind != "created":
        before, size = tree_prefix(input_tree, names.to_os(rel), file_limit)
        notes.append(shown_prefix(size, file_limit))
    if kind != "deleted":
        try:
            after, size = workspace_prefix(workspace, rel, file_limit)
        except OSError as error:
            return [f"Unreadable in workspace: {shown} ({error.strerror})\n"]
        notes.append(shown_prefix(size, file_limit))
    block = _file_diff(shown, before, after)
    return [f"{shown}: {note}\n" for note in notes if note] + block


def workspace_diff(
    input_tree: Tree,
    workspace: Path,
    known_unchanged: Collection[str] = frozenset(),
    *,
    limit: int = DIFF_LIMIT,
    file_limit: int = FILE_LIMIT,
) -> str:
    """A unified diff from the task's input tree to the final workspace, at most limit long.

    Files in known_unchanged are known to hold their input bytes and are not read again; no
    file is read past file_limit, and a diff of a longer file says so.
    """
    change = compare_tree(input_tree, workspace, known_unchanged)
    out: list[str] = []
    size = 0
    entries = [(rel, "changed") for rel in change.differing]
    entries += [(rel, "deleted") for rel in change.missing]
    entries += [(rel, "created") for rel in change.unexpected]
    for rel, kind in sorted(entries):
        for line in _entry_diff(input_tree, workspace, rel, kind, file_limit):
            if size + len(line) > limit:
                out.append("... (diff cut)\n")
                return "".join(out)
            out.append(line)
            size += len(line)
    out.extend(
        f"Invalid entry (symlink or special file): {names.show(rel)}\n" for rel in change.invalid
    )
    return "".join(out)


def trial_change(
    input_tree: Tree, workspace: Path, known_unchanged: Collection[str], change_limit: int
) -> tuple[str, str]:
    """The trial's whole change (change.patch, cut at change_limit) and its short diff
    (diff.patch, cut at DIFF_LIMIT): the change itself when it fits, sparing a second walk."""
    change = workspace_diff(
        input_tree, workspace, known_unchanged, limit=change_limit, file_limit=change_limit
    )
    if len(change) <= DIFF_LIMIT and not change.endswith(DIFF_CUT):
        return change, change
    return change, workspace_diff(input_tree, workspace, known_unchanged)


def round_output(results: Sequence[RoundResult], stream: str) -> str:
    """The stdout or stderr tails of every round, each under a header line."""
    parts = []
    for index, result in enumerate(results):
        tail = getattr(result, f"{stream}_tail")
        if tail:
            parts.append(f"--- round {index} ---\n{tail}")
    return "\n".join(parts)


def trial_artifacts(
    results: Sequence[RoundResult],
    final_diff: str,
    secrets: list[tuple[str, str]],
    verifier_output: str = "",
    change: str = "",
) -> dict[str, str]:
    """The non-empty artifacts of one trial, scrubbed of `secrets` (from secret_variables)."""
    texts = {
        "stdout.txt": round_output(results, "stdout"),
        "stderr.txt": round_output(results, "stderr"),
        "diff.patch": final_diff,
        CHANGE_FILE: change,
        # The final round's message, whose last COMPLETION: line is the trial's verdict.
        "final-message.txt": (results[-1].final_message or "") if results else "",
        # The verifier's output in full up to its limit; the failure report shows its tail.
        "verifier.txt": verifier_output,
    }
    return {name: scrub(text, secrets=secrets) for name, text in texts.items() if text}
