"""Parsing real event streams recorded from codex, claude and opencode (tests/fixtures/events).

The streams were captured from the pinned CLIs against the scripted model server, which
served 1000 input tokens (800 cached) and 50 output tokens (10 reasoning) per response
(codex/cache_write: 1000 input, 600 cached, 300 written to the cache, in each of two).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.agents.base import TokenUsage
from pytest_agentbench.agents.claude import ClaudeAgent
from pytest_agentbench.agents.cli_base import CliAgent, StreamFacts, read_events
from pytest_agentbench.agents.codex import CodexAgent
from pytest_agentbench.agents.opencode import OpencodeAgent
from pytest_agentbench.agents.prices import Price
from pytest_agentbench.settings import Settings

EVENTS = Path(__file__).parent / "fixtures" / "events"
AGENTS: dict[str, type[CliAgent]] = {
    "codex": CodexAgent,
    "claude": ClaudeAgent,
    "opencode": OpencodeAgent,
}


def agent(name: str, **opts: str) -> CliAgent:
    settings = Settings(agent=name, model="scripted-model", agent_opts={"bin": "/bin/true", **opts})
    return AGENTS[name](settings)


def facts(name: str, stream: str) -> StreamFacts:
    return agent(name).parse(read_events(EVENTS / name / f"{stream}.jsonl"))


def usage(responses: int, reasoning: bool = True) -> TokenUsage:
    return TokenUsage(
        input=1000 * responses,
        cached_input=800 * responses,
        output=50 * responses,
        reasoning=10 * responses if reasoning else None,
        cache_write=0,  # the server wrote nothing to the cache, and each CLI says so
    )


# Successful runs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "responses", "tool_calls", "turns"),
    [("codex", 3, 2, None), ("claude", 4, 3, 4), ("opencode", 4, 3, 4)],
)
def test_success_stream_gives_the_served_tokens(
    name: str, responses: int, tool_calls: int, turns: int | None
) -> None:
    got = facts(name, "success")
    assert got.tokens == usage(responses, reasoning=name != "claude")
    assert got.tool_calls == tool_calls
    assert got.turns == turns
    assert got.session_id
    assert got.provider_error is None


def test_codex_counts_cache_writes_apart_and_prices_them_as_writes() -> None:
    """codex 0.171 reads the wire's input_tokens_details.cache_write_tokens and reports them
    as cache_write_input_tokens, inside input_tokens; a price with a cache_write rate bills
    them at it, not at the input rate."""
    got = facts("codex", "cache_write")
    assert got.tokens == TokenUsage(
        input=2000, cached_input=1200, output=100, reasoning=20, cache_write=600
    )
    price = Price("2026-11-01", input=1.0, cached_input=0.1, output=10.0, cache_write=1.25)
    expected = (200 * 1.0 + 1200 * 0.1 + 600 * 1.25 + 100 * 10.0) / 1e6
    assert price.cost(got.tokens) == pytest.approx(expected)
    # Without a cache_write rate, writes cost the input rate (as OpenAI bills them).
    flat = Price("2026-11-01", input=1.0, cached_input=0.1, output=10.0)
    assert flat.cost(got.tokens) == pytest.approx((800 * 1.0 + 1200 * 0.1 + 1000) / 1e6)


def test_codex_cache_writes_a_turn_left_out_are_unknown_and_so_is_their_price() -> None:
    """An older codex gives no cache_write_input_tokens: unknown, never 0; a turn that omits
    it makes the round's figure unknown too; a price that bills writes apart cannot price it."""
    turn = {"input_tokens": 1000, "cached_input_tokens": 800, "output_tokens": 50}
    newer = {**turn, "cache_write_input_tokens": 100}
    for usages in ([turn], [newer, turn]):
        events = [e for u in usages for e in ({"type": "turn.started"},
                                              {"type": "turn.completed", "usage": u})]  # fmt: skip
        tokens = agent("codex").parse(events).tokens
        assert tokens is not None and tokens.cache_write is None
        assert tokens.input == 1000 * len(usages)
        writes = Price("2026-11-01", input=1.0, cached_input=0.1, output=10.0, cache_write=1.25)
        assert writes.cost(tokens) is None
        assert Price("2026-11-01", 1.0, 0.1, 10.0).cost(tokens) is not None


def test_claude_reports_the_model_but_not_a_guessed_cost() -> None:
    got = facts("claude", "success")
    assert got.model_reported == "scripted-model"
    assert got.cost_usd is None  # costBasis "unknown": Claude Code guessed a price


def test_opencode_cost_from_a_provider_without_prices_is_unknown() -> None:
    oc = agent("opencode", base_url="http://127.0.0.1:1/v1")
    got = oc.parse(read_events(EVENTS / "opencode" / "success.jsonl"))
    assert got.cost_usd == pytest.approx(0.0028)  # what opencode printed ...
    assert oc.price(got, got.tokens) is None  # ... is not a price we trust


@pytest.mark.parametrize("name", ["codex", "claude", "opencode"])
def test_transient_server_error_that_was_retried_is_not_a_stop(name: str) -> None:
    got = facts(name, "transient_500")
    assert got.provider_error is None
    assert got.tokens == usage(1, reasoning=name != "claude")


# Resumed sessions ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["codex", "claude", "opencode"])
def test_resumed_round_continues_the_same_session(name: str) -> None:
    first, second = facts(name, "resume_round0"), facts(name, "resume_round1")
    assert first.session_id and first.session_id == second.session_id


def test_codex_reports_session_totals_on_resume() -> None:
    assert facts("codex", "resume_round0").tokens == usage(2)
    assert facts("codex", "resume_round1").tokens == usage(4)  # both rounds together


@pytest.mark.parametrize("name", ["claude", "opencode"])
def test_claude_and_opencode_report_each_run_on_resume(name: str) -> None:
    expected = usage(2, reasoning=name != "claude")
    assert facts(name, "resume_round0").tokens == expected
    assert facts(name, "resume_round1").tokens == expected


# Provider-side failures ----------------------------------------------------------------------


# Only a documented status field of the CLI's error event names a provider stop: Claude Code's
# result.api_error_status and opencode's error.data.statusCode. codex's events carry none.
STATUS_STOPS = {
    ("claude", "rate_limit"): "http_429",
    ("claude", "auth"): "http_401",
    ("claude", "server_error"): "http_500",
    ("opencode", "rate_limit"): "http_429",
    ("opencode", "auth"): "http_401",
}
FAILURES = ["rate_limit", "auth", "server_error", "dropped_stream", "no_connection", "hang"]


@pytest.mark.parametrize("name", ["codex", "claude", "opencode"])
@pytest.mark.parametrize("stream", FAILURES)
def test_only_a_documented_status_field_makes_a_provider_stop(name: str, stream: str) -> None:
    """A failure the stream gives no status for (codex's failed turns, a broken stream, no
    connection, a hung provider) is the agent's outcome, scored as the verifier says."""
    assert facts(name, stream).provider_error == STATUS_STOPS.get((name, stream))


def test_codex_gives_no_tokens_for_a_failed_turn() -> None:
    assert facts("codex", "rate_limit").tokens is None


def test_error_prose_is_never_read_as_a_cause() -> None:
    """Words like "429" or "rate limit" in a message are not a machine-readable cause."""
    claude = {"type": "result", "is_error": True, "terminal_reason": "api_error",
              "result": "API Error: Request rejected (429) rate limit"}  # fmt: skip
    codex = {"type": "turn.failed", "error": {"message": "rate limit (429): try later"}}
    opencode = {"type": "error", "error": {"name": "APIError", "data": {"message": "429"}}}
    for name, event in (("claude", claude), ("codex", codex), ("opencode", opencode)):
        assert agent(name).parse([event]).provider_error is None, name


@given(status=st.integers(100, 599))
def test_a_reported_status_stops_exactly_when_the_wire_rule_says(status: int) -> None:
    """The same statuses as on the wire: 401, 402, 403, 429 and 5xx, named http_<status>."""
    expected = f"http_{status}" if status in (401, 402, 403, 429) or status >= 500 else None
    claude = {"type": "result", "is_error": True, "api_error_status": status, "result": "x"}
    opencode = {"type": "error", "error": {"name": "APIError", "data": {"statusCode": status}}}
    assert agent("claude").parse([claude]).provider_error == expected
    assert agent("opencode").parse([opencode]).provider_error == expected


@pytest.mark.parametrize("name", ["codex", "claude", "opencode"])
def test_empty_or_garbled_stream_says_nothing(name: str, tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('not json\n{"type": "unknown"}\n[1, 2]\n{"truncated": ', encoding="utf-8")
    got = agent(name).parse(read_events(path))
    assert got.tokens is None and got.cost_usd is None and got.provider_error is None


# The final message ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_the_final_message_is_the_last_answer_of_the_stream(name: str) -> None:
    assert facts(name, "success").final_message == "All done."


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_a_stream_without_an_answer_has_no_final_message(name: str) -> None:
    assert facts(name, "no_connection").final_message is None


def test_codex_keeps_the_last_agent_message() -> None:
    events = [
        {"type": "item.completed", "item": {"type": "agent_message", "text": "Looking."}},
        {"type": "item.completed", "item": {"type": "command_execution", "command": "ls"}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "COMPLETION: done"}},
    ]
    assert agent("codex").parse(events).final_message == "COMPLETION: done"


def test_claude_falls_back_to_the_last_assistant_text_when_the_result_is_an_error() -> None:
    said = {"type": "text", "text": "Partly.\nCOMPLETION: partial"}
    events = [
        {"type": "assistant", "message": {"id": "m1", "content": [said]}},
        {"type": "assistant", "message": {"id": "m2", "content": [{"type": "tool_use"}]}},
        {"type": "result", "is_error": True, "result": "API Error: 500"},
    ]
    assert agent("claude").parse(events).final_message == "Partly.\nCOMPLETION: partial"
    events[-1] = {"type": "result", "is_error": False, "result": "COMPLETION: done"}
    assert agent("claude").parse(events).final_message == "COMPLETION: done"


def test_opencode_takes_the_text_of_the_step_that_stopped() -> None:
    def text(message: str, words: str) -> dict[str, object]:
        return {"type": "text", "part": {"messageID": message, "text": words}}

    def finish(message: str, reason: str) -> dict[str, object]:
        return {"type": "step_finish", "part": {"messageID": message, "reason": reason}}

    events = [
        text("m1", "Let me look."),
        finish("m1", "tool-calls"),
        text("m2", "It cannot be done."),
        text("m2", "COMPLETION: incomplete"),
        finish("m2", "stop"),
    ]
    assert agent("opencode").parse(events).final_message == (
        "It cannot be done.\nCOMPLETION: incomplete"
    )
    assert agent("opencode").parse(events[:2]).final_message is None
