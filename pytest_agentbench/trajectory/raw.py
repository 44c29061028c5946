"""A trial's raw evidence, kept compressed and bounded in its trial directory.

Each round's streams (the CLI's events, the wire the meter saw, stdout, a file the agent
wrote, the mock's simulation) go into one gzip file, `raw.jsonl.gz`, as JSON lines: a
`round` line with the prompt, then `stream` lines carrying the stream's text in chunks. Each
round is its own gzip member, so the compressed size is known exactly as the file grows; the
member that would pass the limit is replaced by a `cut` line saying what was left out, and
nothing after it is kept. The closing `trial` line carries what the checks need (the task's
test command and protected paths), so a run directory can be retraced on its own.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

ARCHIVE = "raw.jsonl.gz"
STREAMS = ("events", "wire", "stdout", "file", "simulated")
DEFAULT_LIMIT = 16 << 20  # compressed bytes per trial
CHUNK = 1 << 20  # characters of a stream per line: no reader holds a line longer
RESERVED = 4096  # kept free under the limit for the cut line and the trial line
LEVEL = 6


@dataclass
class RoundEvidence:
    """One round's prompt and raw streams."""

    attempt: int
    round: int
    prompt: str
    streams: dict[str, str] = field(default_factory=dict)


@dataclass
class Evidence:
    """What an archive holds: the rounds kept, the cut (None: nothing was), the trial facts."""

    rounds: list[RoundEvidence]
    cut: str | None = None
    trial: dict[str, Any] = field(default_factory=dict)


def _line(record: Mapping[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _round_lines(evidence: RoundEvidence) -> Iterator[bytes]:
    where = {"attempt": evidence.attempt, "round": evidence.round}
    yield _line({"kind": "round", **where, "prompt": evidence.prompt})
    for name, text in evidence.streams.items():
        for start in range(0, max(len(text), 1), CHUNK):
            yield _line(
                {"kind": "stream", **where, "stream": name, "data": text[start : start + CHUNK]}
            )


class RawArchive:
    """Collects a trial's rounds as they end (compressed at once, so the raw text is not held
    for the trial's length) and gives the file's bytes at the end."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self.members: list[bytes] = []
        self.size = 0
        self.cut: str | None = None
        self.kept: list[RoundEvidence] = []

    def add(self, evidence: RoundEvidence) -> None:
        """Keep the round, unless the archive is already cut or this round would pass the
        limit (then the cut says so)."""
        if self.cut is not None:
            return
        member = gzip.compress(b"".join(_round_lines(evidence)), LEVEL, mtime=0)
        if self.size + len(member) > self.limit - RESERVED:
            shown = f"{self.limit >> 20} MiB" if self.limit >= 1 << 20 else f"{self.limit} B"
            self.cut = (
                f"raw evidence cut at {shown} compressed (--agentbench-raw-limit): attempt "
                f"{evidence.attempt} round {evidence.round} and everything after it not kept"
            )
            self._append(gzip.compress(_line({"kind": "cut", "reason": self.cut}), LEVEL, mtime=0))
            return
        self._append(member)
        self.kept.append(evidence)

    def _append(self, member: bytes) -> None:
        self.members.append(member)
        self.size += len(member)

    def close(self, trial: Mapping[str, Any]) -> bytes:
        """The archive's bytes, ending with the trial line."""
        tail = gzip.compress(_line({"kind": "trial", **trial}), LEVEL, mtime=0)
        return b"".join([*self.members, tail])


def read_archive(data: bytes) -> Evidence:
    """The rounds, cut and trial facts of an archive (a torn last member is left out)."""
    try:
        text = gzip.decompress(data).decode("utf-8", "replace")
    except (OSError, EOFError, zlib.error):
        text = _readable_prefix(data)
    evidence = Evidence([])
    for raw in text.split("\n"):
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        kind = record.get("kind") if isinstance(record, dict) else None
        if kind == "round":
            evidence.rounds.append(
                RoundEvidence(int(record["attempt"]), int(record["round"]), str(record["prompt"]))
            )
        elif kind == "stream" and evidence.rounds:
            streams = evidence.rounds[-1].streams
            name = str(record.get("stream"))
            streams[name] = streams.get(name, "") + str(record.get("data") or "")
        elif kind == "cut":
            evidence.cut = str(record.get("reason"))
        elif kind == "trial":
            evidence.trial = {k: v for k, v in record.items() if k != "kind"}
    return evidence


def _readable_prefix(data: bytes) -> str:
    """The whole members of a file whose last member is torn (a killed write)."""
    out, rest = [], data
    while rest:
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            text = member.decompress(rest)
        except zlib.error:
            break
        if not member.eof:
            break
        out.append(text)
        rest = member.unused_data
    return b"".join(out).decode("utf-8", "replace")
