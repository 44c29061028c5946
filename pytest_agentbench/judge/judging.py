"""`agentbench judge` and `agentbench review` without their command lines: pairs made into
prompts in both orders, asked through the cache, and what was asked kept for the tally.

judging.json in the run directory says what the latest judge command asked (its sides,
judges, gold threshold and the keys of its prompts); the tally counts those records of
judgements.jsonl only, so records of an earlier, different request stay cached but do not mix
into the figures.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.judge.asking import Asker
from pytest_agentbench.judge.calls import Ask, Asked, Budget, ask_all, read_records
from pytest_agentbench.judge.pairs import Pair, Side
from pytest_agentbench.judge.prompts import (
    PAIR_SYSTEM,
    REVIEW_SYSTEM,
    pair_prompt,
    redactor,
    review_prompt,
)
from pytest_agentbench.judge.verdict import parse_review, parse_verdict
from pytest_agentbench.run.store import write_atomic

JUDGEMENTS_FILE = "judgements.jsonl"
SELECTION_FILE = "judging.json"
REVIEWS_FILE = "reviews.jsonl"
GOLD_THRESHOLD = 0.8


def _reader(sides: tuple[str, str], first: int) -> Callable[[str], dict[str, Any]]:
    """An answer read with change A being sides[first]."""
    shown = {"A": sides[first], "B": sides[1 - first]}

    def read(text: str) -> dict[str, Any]:
        verdict = parse_verdict(text)
        findings = []
        for finding in verdict.findings:
            found = finding.to_dict()
            found["side"] = shown[found.pop("change")]
            findings.append(found)
        winner = "tie" if verdict.verdict == "tie" else shown[verdict.verdict]
        return {"verdict": verdict.verdict, "winner": winner, "findings": findings}

    return read


def pair_asks(pairs: Sequence[Pair], judges: Sequence[Asker], names: set[str]) -> list[Ask]:
    """Every pair to every judge, in both orders."""
    hide = redactor(names)
    asks = []
    for judge in judges:
        for pair in pairs:
            shown = [(c.diff, c.passed) for c in pair.changes]
            facts = {
                "kind": pair.kind,
                "task": pair.task,
                "repeat": pair.repeat,
                "gold": pair.gold,
                "sides": list(pair.sides),
                "trials": [c.trial for c in pair.changes],
                "passed": [c.passed for c in pair.changes],
            }
            for first in (0, 1):
                prompt = pair_prompt(pair.prompt, shown[first], shown[1 - first], hide)
                read = _reader(pair.sides, first)
                ask_facts = {**facts, "first": pair.sides[first]}
                asks.append(Ask(judge, PAIR_SYSTEM, prompt, ask_facts, read))
    return asks


def judge_pairs(
    run_dir: Path,
    sides: Sequence[Side],
    asks: Sequence[Ask],
    request: dict[str, Any],
    budget: Budget,
    log: Callable[[str], None],
) -> Asked:
    """Ask every ask (cached ones from judgements.jsonl) and record the request."""
    selection = {
        **request,
        "sides": [s.label for s in sides],
        "sources": [{"label": s.label, "run_dir": str(s.run_dir), "arm": s.arm} for s in sides],
        "judges": sorted({a.judge.name for a in asks}),
        "keys": [a.key for a in asks],
    }
    write_atomic(run_dir / SELECTION_FILE, json.dumps(selection, indent=1) + "\n")
    return ask_all(asks, run_dir / JUDGEMENTS_FILE, budget, log)


def read_judgements(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The latest judge request of the run directory and its records (asked so far), or
    None when it was never judged."""
    try:
        selection = json.loads((run_dir / SELECTION_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{run_dir / SELECTION_FILE}: not JSON ({exc})") from None
    records = read_records(run_dir / JUDGEMENTS_FILE)
    return selection, [records[k] for k in selection["keys"] if k in records]


def review_ask(
    judge: Asker,
    task_prompt: str,
    diff: str,
    passed: bool | None,
    facts: dict[str, Any],
    names: set[str],
) -> Ask:
    """One change to one judge for review."""

    def read(text: str) -> dict[str, Any]:
        return {"findings": [f.to_dict() for f in parse_review(text)]}

    prompt = review_prompt(task_prompt, diff, passed, redactor(names))
    return Ask(judge, REVIEW_SYSTEM, prompt, facts, read)
