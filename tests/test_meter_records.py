"""A trial's request log summed into `metered`, and the provider stop read from the wire."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.meter.records import (
    failed_call,
    main_tokens,
    summarize,
    wire_failure,
    wire_stop,
)

USAGE = {"input": 100, "cached_input": 60, "cache_write": None, "output": 9, "reasoning": 2}


def rec(status: int | None, injected: str | None = None, tools: bool = True, **kw: Any) -> dict:
    usage = kw.get("usage", USAGE if status == 200 and not injected else None)
    return {
        "status": status,
        "injected": injected,
        "has_tools": tools,
        "protocol": "chat",
        "usage": usage,
        "failure": kw.get("failure"),
    }


UNREACHABLE = rec(None, failure="upstream_unreachable")
RESET = rec(200, failure="connection_reset")


def test_summary_counts_answered_requests_and_keeps_side_requests_apart() -> None:
    log = [rec(200, tools=False), rec(500, "500"), rec(200), rec(429)]
    metered = summarize(log)
    assert metered["requests"] == 4
    assert metered["statuses"] == {"200": 2, "429": 1, "500": 1}
    assert metered["tokens"] == {k: None if v is None else 2 * v for k, v in USAGE.items()}
    assert (metered["side_requests"], metered["side_tokens"]) == (1, USAGE)
    assert (metered["faults"], metered["retried_after_fault"]) == (1, True)
    assert main_tokens(metered) == USAGE  # the one answered request that carried tools


def test_main_tokens_leave_side_requests_out_and_keep_unknown_unknown() -> None:
    assert main_tokens(summarize([rec(200), rec(200)])) == summarize([rec(200), rec(200)])["tokens"]
    without_usage = summarize([rec(200), rec(200, tools=False, usage=None)])
    assert without_usage["side_requests"] == 1
    assert main_tokens(without_usage) == dict.fromkeys(USAGE)  # the side part is unknown
    assert main_tokens(summarize([])) is None


def test_an_answer_without_usage_makes_the_total_unknown_not_smaller() -> None:
    metered = summarize([rec(200), rec(200, usage=None)])
    assert metered["tokens"] == dict.fromkeys(USAGE)
    assert summarize([])["tokens"] is None
    assert summarize([rec(200), rec(500, "500")])["retried_after_fault"] is False


@pytest.mark.parametrize(
    ("statuses", "cause"),
    [
        ([200, 401], "http_401"),
        ([200, 429, 429], "http_429"),
        ([503, 200], None),  # recovered
        ([200, 402, 400], "http_402"),  # a 400 is the agent's request, not the provider
        ([200, 404], None),
        ([None, 502], "http_502"),
        ([200], None),
    ],
)
def test_wire_stop_is_the_last_provider_refusal_without_a_success_after(
    statuses: list[int | None], cause: str | None
) -> None:
    assert wire_stop([rec(s) for s in statuses]) == cause


def test_injected_faults_never_stop() -> None:
    assert wire_stop([rec(200), rec(401, "401")]) is None
    assert wire_stop([rec(500), rec(200, "drop")]) == "http_500"


@pytest.mark.parametrize(
    ("log", "failure", "stop"),
    [
        ([UNREACHABLE], "upstream_unreachable", None),
        ([rec(200), UNREACHABLE, UNREACHABLE], "upstream_unreachable", None),
        ([UNREACHABLE, rec(200)], None, None),  # recovered
        ([rec(429), UNREACHABLE], "upstream_unreachable", None),  # the wire's last word
        ([UNREACHABLE, rec(429)], None, "http_429"),
        ([rec(200), RESET, rec(400)], "connection_reset", None),  # a 400 is the agent's
        ([rec(200), rec(None, failure="dns_failure"), rec(502, "502")], "dns_failure", None),
        ([rec(None), rec(502)], None, "http_502"),  # an upstream 502 is the provider's stop
    ],
)
def test_a_wire_failure_is_the_last_word_of_the_wire_and_never_a_stop(
    log: list[dict], failure: str | None, stop: str | None
) -> None:
    assert (wire_failure(log), wire_stop(log)) == (failure, stop)


@pytest.mark.parametrize(
    ("log", "cause"),
    [
        ([], None),
        ([rec(200)], None),
        ([rec(200), rec(404)], "http_404"),
        ([rec(400), rec(200)], None),
        ([rec(200), RESET], "connection_reset"),
        ([rec(400), rec(200, "drop")], "http_400"),  # an injected fault is not the call
    ],
)
def test_failed_call_is_how_the_last_model_call_ended(log: list[dict], cause: str | None) -> None:
    assert failed_call(log) == cause
