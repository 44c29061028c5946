"""What a judge is shown: the task's prompt, the changes as unified diffs and the verifier's
outcome, anonymised (docs/judges.md). Nothing else of a trial reaches the prompt: no arm,
agent, model, run or path, and the words naming them are redacted from the diffs too, so a
judge cannot tell whose change it reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[redacted]"
MIN_REDACTED = 3  # shorter names are too common a word to take out of code
OUTCOME_LABELS = {True: "passed", False: "failed", None: "not run"}

FINDINGS_SHAPE = (
    '{"severity": "critical"|"major"|"minor", "file": "path/in/the/diff", '
    '"line": <line number in the new file, or null>, "text": "what is wrong"}'
)
SEVERITY_MEANING = (
    "critical: wrong result, data loss, security hole or a broken build; "
    "major: a bug in some case, a missing part of the task, a test that proves nothing; "
    "minor: style, naming, dead code, needless churn."
)
PAIR_SYSTEM = f"""You review code changes. You are shown one task and two changes that \
attempt it, "change A" and "change B", each a unified diff against the same starting files, \
with the outcome of the task's own verifier. Decide which change is the better solution to \
the task: correct first, then complete, then simple and easy to maintain. Say "tie" only \
when neither is better. The order in which the changes are shown means nothing.

List the problems you find in either change. Severities: {SEVERITY_MEANING}

Answer with one JSON object and nothing else:
{{"verdict": "A"|"B"|"tie", "findings": [{{"change": "A"|"B", {FINDINGS_SHAPE[1:]}]}}"""
REVIEW_SYSTEM = f"""You review code changes. You are shown one task and one change that \
attempts it, a unified diff against the starting files, with the outcome of the task's own \
verifier. List the problems you find in the change. Severities: {SEVERITY_MEANING}

Answer with one JSON object and nothing else:
{{"findings": [{FINDINGS_SHAPE}]}}"""


def fenced(text: str, info: str = "") -> str:
    """text in a code fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{info}\n{body}{fence}\n"


def redactor(names: Iterable[str]) -> re.Pattern[str] | None:
    """A pattern of the names (arms, agents, models, paths) to take out of what the judge
    reads: whole words, any case; None when there is none long enough."""
    kept = sorted({n for n in names if len(n) >= MIN_REDACTED}, key=len, reverse=True)
    if not kept:
        return None
    return re.compile("|".join(rf"(?<![\w-]){re.escape(n)}(?![\w-])" for n in kept), re.IGNORECASE)


# A trial's sandbox directory (sandbox/base.py make_trial_root: agentbench-TASK-ARM-rK-...)
# and the directories above it, as an absolute path in a diff: the arm is inside a name the
# word pattern does not take apart, so the whole path up to it goes.
SANDBOX_PATH = re.compile(r"(?:/[^/\s]+)*/agentbench-[^/\s]+")


def redact(text: str, pattern: re.Pattern[str] | None) -> str:
    text = SANDBOX_PATH.sub(REDACTED, text)
    return text if pattern is None else pattern.sub(REDACTED, text)


def _change(heading: str, diff: str, passed: bool | None) -> str:
    shown = diff if diff.strip() else "(no change: the starting files as they were)\n"
    return f"## {heading}\n\nVerifier: {OUTCOME_LABELS[passed]}\n\n{fenced(shown, 'diff')}\n"


def pair_prompt(
    task_prompt: str,
    first: tuple[str, bool | None],
    second: tuple[str, bool | None],
    names: re.Pattern[str] | None,
) -> str:
    """The prompt showing `first` as change A and `second` as change B, each (diff, passed)."""
    return redact(
        f"# Task\n\n{fenced(task_prompt)}\n"
        + _change("Change A", *first)
        + _change("Change B", *second)
        + "Which change is better? Answer with the JSON object only.\n",
        names,
    )


def review_prompt(
    task_prompt: str, diff: str, passed: bool | None, names: re.Pattern[str] | None
) -> str:
    """The prompt showing one change for review."""
    return redact(
        f"# Task\n\n{fenced(task_prompt)}\n"
        + _change("Change", diff, passed)
        + "List the problems. Answer with the JSON object only.\n",
        names,
    )
