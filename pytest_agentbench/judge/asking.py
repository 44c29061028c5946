"""How a judge is asked: one prompt in, the text of one answer out, with what it cost.

The judge's transports (a model API, an agent CLI) each give an Asker; everything above them
(prompts, verdicts, the cache, the tally) sees only this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Answer:
    """One answer: its text and its usage, each None where the transport did not say."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None


class JudgeError(RuntimeError):
    """The judge could not be asked (no connection, an HTTP error, a CLI that failed): an
    infrastructure failure, recorded as such and never read as a verdict."""


class Asker(Protocol):
    """A judge that can be asked. `name` identifies it in the cache key and the tally (e.g.
    `anthropic:claude-sonnet-4-5`, `agent:claude:claude-sonnet-4-5`)."""

    name: str

    def ask(self, system: str, prompt: str) -> Answer:
        """The judge's answer to one prompt; JudgeError when it could not be asked."""
        ...
