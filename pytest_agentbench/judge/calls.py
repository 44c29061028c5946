"""Asking a judge through its cache and within a budget (docs/judges.md).

The cache is the record file itself (judgements.jsonl, reviews.jsonl): one line per asked
prompt, keyed by the sha256 of the judge's name, the system prompt and the prompt, appended
and flushed as each answer comes, so an interrupted command keeps every finished call and a
second one asks only what is missing. A call that could not be made (no connection, an HTTP
error) is recorded but not cached: the next command asks it again. An answer that does not
parse is the judge's answer and stays cached, counted as a judge error.

The budget counts what this command spends; answers from the cache cost nothing again. A
cost or token count the judge did not report cannot be held to a budget: with that budget
set, the first such call stops the command, saying so.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentbench.judge.asking import Answer, Asker, JudgeError

TRANSPORT = "transport"  # an error kind: the call was not made; asked again next time
ANSWER = "answer"  # an error kind: the judge's answer did not parse


def ask_key(judge: str, system: str, prompt: str) -> str:
    digest = hashlib.sha256()
    for part in (judge, system, prompt):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def read_records(path: Path) -> dict[str, dict[str, Any]]:
    """The latest record of each key; a torn last line (an interrupted write) is ignored,
    any other bad line is an error naming the file and line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return {}
    records: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):
                break
            raise ValueError(f"{path}:{number}: not a JSON line ({exc}); remove the line") from None
        if not isinstance(record, dict) or not isinstance(record.get("key"), str):
            raise ValueError(f"{path}:{number}: expected an object with a key; remove the line")
        records[record["key"]] = record
    return records


def cached(record: dict[str, Any] | None) -> bool:
    return record is not None and (record.get("error") or {}).get("kind") != TRANSPORT


@dataclass
class Budget:
    """What this command may spend (None: no bound) and what it has spent."""

    usd: float | None = None
    tokens: int | None = None
    spent_usd: float = 0.0
    spent_tokens: int = 0
    calls: int = 0
    stopped: str | None = None

    def add(self, answer: Answer | None) -> None:
        self.calls += 1
        cost = None if answer is None else answer.cost_usd
        given = None if answer is None else answer.input_tokens
        produced = None if answer is None else answer.output_tokens
        tokens = None if given is None or produced is None else given + produced
        self.spent_usd += cost or 0.0
        self.spent_tokens += tokens or 0
        if self.usd is not None and cost is None and answer is not None:
            self.stopped = "the judge reported no cost, so --budget-usd cannot be kept"
        elif self.tokens is not None and tokens is None and answer is not None:
            self.stopped = "the judge reported no token counts, so --budget-tokens cannot be kept"
        elif self.usd is not None and self.spent_usd >= self.usd:
            self.stopped = f"--budget-usd {self.usd:g} reached (spent {self.spent_usd:.4f} USD)"
        elif self.tokens is not None and self.spent_tokens >= self.tokens:
            self.stopped = f"--budget-tokens {self.tokens} reached (spent {self.spent_tokens})"


@dataclass(frozen=True)
class Ask:
    """One prompt to one judge, and what its record says about it besides the answer."""

    judge: Asker
    system: str
    prompt: str
    facts: dict[str, Any]  # the record's fields that say what was asked
    # The answer's text to the record's verdict fields; ValueError for one that does not parse
    read: Callable[[str], dict[str, Any]]

    @property
    def key(self) -> str:
        return ask_key(self.judge.name, self.system, self.prompt)


@dataclass
class Asked:
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # by key, cached or new
    new: int = 0
    failed: int = 0
    budget: Budget = field(default_factory=Budget)


def ask_all(
    asks: Iterable[Ask],
    path: Path,
    budget: Budget,
    log: Callable[[str], None],
) -> Asked:
    """Every ask answered, from the cache at path or by its judge, until the budget stops."""
    known = read_records(path)
    done = Asked(budget=budget)
    with path.open("a", encoding="utf-8") as out:
        for ask in asks:
            key = ask.key
            if cached(known.get(key)):
                done.records[key] = known[key]
                continue
            if budget.stopped:
                continue
            record = _asked(ask, key)
            budget.add(record.pop("_answer"))
            out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
            out.flush()
            done.records[key] = record
            done.new += 1
            if record["error"] and record["error"]["kind"] == TRANSPORT:
                done.failed += 1
                log(f"{ask.judge.name}: {record['error']['message']}")
            if budget.stopped:
                log(f"stopped asking: {budget.stopped}")
    return done


def _asked(ask: Ask, key: str) -> dict[str, Any]:
    record: dict[str, Any] = {"key": key, "judge": ask.judge.name, **ask.facts}
    answer = None
    try:
        answer = ask.judge.ask(ask.system, ask.prompt)
    except JudgeError as exc:
        record["error"] = {"kind": TRANSPORT, "message": str(exc)}
    if answer is not None:
        try:
            record.update(ask.read(answer.text))
            record["error"] = None
        except ValueError as exc:
            record["error"] = {"kind": ANSWER, "message": str(exc)}
        record["answer"] = answer.text
    record.update(
        input_tokens=None if answer is None else answer.input_tokens,
        output_tokens=None if answer is None else answer.output_tokens,
        cost_usd=None if answer is None else answer.cost_usd,
        at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        _answer=answer,
    )
    return record
