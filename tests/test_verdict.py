"""The completion verdict: the last `COMPLETION:` line of the final message, or none."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.tasks.verdict import VERDICTS, bounded, parse_verdict

# Text lines that hold no verdict line: the word never appears in them.
plain_lines = st.lists(
    st.text(st.characters(exclude_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")).filter(
        lambda line: "completion" not in line.casefold()
    ),
    max_size=5,
)
reasons = st.text(st.characters(categories=("L", "N"), include_characters=" ()'"), max_size=40).map(
    str.strip
)
verdicts = st.sampled_from(VERDICTS)


def _cased(word: str, pattern: list[bool]) -> str:
    flags = (pattern + [False] * len(word))[: len(word)]
    return "".join(c.upper() if up else c for c, up in zip(word, flags, strict=True))


@given(plain_lines, verdicts, reasons, plain_lines, st.lists(st.booleans(), max_size=12))
def test_the_verdict_line_is_found_among_other_lines(before, verdict, reason, after, caps):
    line = f"{_cased('COMPLETION', caps)}: {_cased(verdict, caps)}"
    if reason:
        line += f" \u2014 {reason}"
    message = "\n".join([*before, line, *after])
    assert parse_verdict(message) == (verdict, reason or None)


@given(plain_lines)
def test_a_message_without_a_verdict_line_has_no_verdict(lines):
    assert parse_verdict("\n".join(lines)) == (None, None)


@given(verdicts, verdicts, plain_lines)
def test_the_last_verdict_line_wins(first, last, between):
    message = "\n".join([f"COMPLETION: {first}", *between, f"COMPLETION: {last} - final word"])
    assert parse_verdict(message) == (last, "final word")


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (None, (None, None)),
        ("", (None, None)),
        ("All tests pass.\nCOMPLETION: done", ("done", None)),
        ("COMPLETION: done.", ("done", None)),
        (
            "**COMPLETION: incomplete** \u2014 spec.md is not in the repository",
            (
                "incomplete",
                "spec.md is not in the repository",
            ),
        ),
        ("- completion: Partial: the parser only", ("partial", "the parser only")),
        ("> `COMPLETION: INCOMPLETE`", ("incomplete", None)),
        ("COMPLETION:done", ("done", None)),
        ("Finish with COMPLETION: done|partial|incomplete as asked.", (None, None)),
        ("COMPLETION: done|partial|incomplete", (None, None)),
        ("COMPLETION: done/partial", (None, None)),
        ("COMPLETION: doneness", (None, None)),
        ("COMPLETION: finished", (None, None)),
        ("I reached COMPLETION: done", (None, None)),  # only a line that starts with it counts
        ("COMPLETION: incomplete - blocked\nThanks!", ("incomplete", "blocked")),
    ],
)
def test_examples(message, expected):
    assert parse_verdict(message) == expected


def test_bounded_keeps_the_end_where_the_verdict_is():
    message = "x" * 100 + "\nCOMPLETION: done"
    assert bounded(message, 20) == message[-20:]
    assert parse_verdict(bounded(message, 20)) == ("done", None)
    assert bounded(None) is None
