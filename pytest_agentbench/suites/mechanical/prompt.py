"""The fixed preamble every task prompt starts with, and how text is quoted in it."""

from __future__ import annotations

import json

PREAMBLE = (
    "The edit below is fully specified: carry it out exactly as described, without "
    "investigating the code around it. Paths are relative to the working directory. "
    "There is no git repository. Quoted text is written in JSON string notation with "
    "every non-ASCII and invisible character escaped (for example \\u200b is a zero-width "
    "space and \\t a tab): decode it and treat the result as literal text, never as a "
    "pattern. A quoted line is given without its line ending. Leave everything else "
    "unchanged, byte for byte, and create no extra files."
)


def quote(text: str) -> str:
    """Text as an ASCII-only JSON string literal, so no character hides in the prompt."""
    return json.dumps(text, ensure_ascii=True)


def compose(instruction: str) -> str:
    """The full prompt: the preamble, a blank line, the family's instruction."""
    prompt = f"{PREAMBLE}\n\n{instruction.strip()}\n"
    if not prompt.isascii():
        raise ValueError(f"prompt must be ASCII; quote non-ASCII text with quote(): {prompt!r}")
    return prompt
