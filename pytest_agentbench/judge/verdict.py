"""The judge's answer read strictly: one JSON object, fenced or bare, with exactly the fields
the prompt asks for. An answer that does not parse is a judge error naming the field, never a
tie: a judge that cannot follow the format is not counted as undecided.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

VERDICTS = ("A", "B", "tie")
CHANGES = ("A", "B")
SEVERITIES = ("critical", "major", "minor")
FENCE = re.compile(r"^(`{3,})[ \t]*(?:json)?[ \t]*\n(.*?)\n\1[ \t]*$", re.DOTALL | re.MULTILINE)


JSON_KINDS: dict[type, str] = {list: "array", str: "string", int: "number", float: "number"}
JSON_KINDS |= {bool: "boolean", type(None): "null"}


class VerdictError(ValueError):
    """An answer that is not the verdict asked for; the message names the field."""


@dataclass(frozen=True)
class Finding:
    """One problem the judge found: in which change (None in a single-change review), how
    bad, where."""

    change: str | None
    severity: str
    file: str
    line: int | None
    text: str

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"severity": self.severity, "file": self.file}
        found.update({"line": self.line, "text": self.text})
        return found if self.change is None else {"change": self.change, **found}


@dataclass(frozen=True)
class Verdict:
    verdict: str  # A, B or tie
    findings: tuple[Finding, ...]


def answer_object(text: str) -> dict[str, Any]:
    """The one JSON object an answer holds: the whole answer, or its one fenced block."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        blocks = FENCE.findall(stripped)
        if len(blocks) != 1:
            found = "no JSON object" if not blocks else f"{len(blocks)} fenced blocks"
            raise VerdictError(
                f"the answer holds {found}; expected one JSON object, bare or in one fence"
            )
        stripped = blocks[0][1].strip()
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise VerdictError(f"the answer is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        kind = JSON_KINDS.get(type(value), type(value).__name__)
        raise VerdictError(
            f"the answer is a JSON {kind}, expected an object: {{...}} with the fields asked for"
        )
    return value


def _exact_keys(value: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    extra = sorted(set(value) - set(keys))
    missing = [k for k in keys if k not in value]
    if extra:
        raise VerdictError(f"{where}: unknown field(s) {', '.join(extra)}; allowed: {keys}")
    if missing:
        raise VerdictError(f"{where}: missing field(s) {', '.join(missing)}")


def _finding(raw: Any, where: str, with_change: bool) -> Finding:
    if not isinstance(raw, dict):
        raise VerdictError(f"{where}: expected an object")
    keys = ("severity", "file", "line", "text")
    _exact_keys(raw, ("change", *keys) if with_change else keys, where)
    change = raw.get("change")
    if with_change and change not in CHANGES:
        raise VerdictError(f"{where}.change: {change!r}, expected one of {CHANGES}")
    if raw["severity"] not in SEVERITIES:
        raise VerdictError(f"{where}.severity: {raw['severity']!r}, expected one of {SEVERITIES}")
    for key in ("file", "text"):
        if not isinstance(raw[key], str):
            raise VerdictError(f"{where}.{key}: expected a string, got {raw[key]!r}")
    line = raw["line"]
    if line is not None and (isinstance(line, bool) or not isinstance(line, int) or line < 1):
        raise VerdictError(f"{where}.line: expected a line number >= 1 or null, got {line!r}")
    return Finding(change, raw["severity"], raw["file"], line, raw["text"])


def findings_of(value: dict[str, Any], with_change: bool) -> tuple[Finding, ...]:
    raw = value["findings"]
    if not isinstance(raw, list):
        raise VerdictError(f"findings: expected a list, got {type(raw).__name__}")
    return tuple(_finding(f, f"findings[{i}]", with_change) for i, f in enumerate(raw))


def parse_verdict(text: str) -> Verdict:
    """A pairwise answer: {"verdict": "A"|"B"|"tie", "findings": [...]}."""
    value = answer_object(text)
    _exact_keys(value, ("verdict", "findings"), "answer")
    if value["verdict"] not in VERDICTS:
        raise VerdictError(f"verdict: {value['verdict']!r}, expected one of {VERDICTS}")
    return Verdict(value["verdict"], findings_of(value, with_change=True))


def parse_review(text: str) -> tuple[Finding, ...]:
    """A single-change review: {"findings": [...]}, findings without "change"."""
    value = answer_object(text)
    _exact_keys(value, ("findings",), "answer")
    return findings_of(value, with_change=False)
