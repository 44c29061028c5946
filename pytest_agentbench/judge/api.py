"""Judges asked over a model API: OpenAI Chat Completions and Anthropic Messages, one
non-streamed request per prompt, with the standard library's HTTP client.

Token counts come from the response's usage block, in the project's meaning (input counts
cached tokens too); the cost from a price table (agents/prices.py) when it has the model, else
it stays unknown. A key comes from OPENAI_API_KEY / ANTHROPIC_API_KEY; a judge at a base URL
of its own (a local server) may do without one.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_agentbench.agents.base import TokenUsage
from pytest_agentbench.agents.prices import Price
from pytest_agentbench.judge.asking import Answer, Asker, JudgeError

APIS = ("openai", "anthropic")
DEFAULT_BASE = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
KEY_VARIABLE = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
ANTHROPIC_VERSION = "2023-06-01"
MAX_OUTPUT_TOKENS = 4096
ERROR_TAIL = 300


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass
class ApiAsker:
    """One model behind one API; `name` is API:MODEL (the base URL does not change who
    judges, so it is not part of the name or the cache key)."""

    api: str
    model: str
    base_url: str
    key: str | None
    price: Price | None
    timeout: float
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = f"{self.api}:{self.model}"

    def ask(self, system: str, prompt: str) -> Answer:
        if self.api == "openai":
            url = f"{self.base_url}/chat/completions"
            headers = {"authorization": f"Bearer {self.key}"} if self.key else {}
            messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
            body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": False}
        else:
            url = f"{self.base_url}/v1/messages"
            headers = {"anthropic-version": ANTHROPIC_VERSION}
            if self.key:
                headers["x-api-key"] = self.key
            body = {
                "model": self.model,
                "max_tokens": MAX_OUTPUT_TOKENS,
                "system": system,
                "messages": [{"role": "user", "content": prompt}],
            }
        reply = self._post(url, headers, body)
        text, tokens = (_openai if self.api == "openai" else _anthropic)(reply, url)
        cost = self.price.cost(tokens) if self.price is not None else None
        return Answer(text, tokens.input, tokens.output, cost)

    def _post(self, url: str, headers: Mapping[str, str], body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            url,
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json", **headers},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                data = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[-ERROR_TAIL:]
            raise JudgeError(f"{url}: HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise JudgeError(f"{url}: {getattr(exc, 'reason', exc)}") from None
        try:
            return json.loads(data)
        except json.JSONDecodeError:
            raise JudgeError(f"{url}: the response is not JSON: {data[:ERROR_TAIL]!r}") from None


def _openai(reply: Any, url: str) -> tuple[str, TokenUsage]:
    try:
        text = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise JudgeError(f"{url}: no choices[0].message.content in the response") from None
    usage = reply.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    tokens = TokenUsage(
        input=_count(usage.get("prompt_tokens")),
        cached_input=_count(details.get("cached_tokens")),
        output=_count(usage.get("completion_tokens")),
    )
    return str(text or ""), tokens


def _anthropic(reply: Any, url: str) -> tuple[str, TokenUsage]:
    content = reply.get("content") if isinstance(reply, dict) else None
    if not isinstance(content, list):
        raise JudgeError(f"{url}: no content list in the response")
    text = "".join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    )
    usage = reply.get("usage") or {}
    parts = [
        _count(usage.get(k))
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    ]
    uncached, cached, written = parts
    whole = None if uncached is None else uncached + (cached or 0) + (written or 0)
    tokens = TokenUsage(input=whole, cached_input=cached, output=_count(usage.get("output_tokens")))
    return text, tokens


def api_asker(
    api: str,
    model: str,
    base_url: str | None,
    prices: Mapping[str, Price],
    timeout: float,
    environ: Mapping[str, str] | None = None,
) -> Asker:
    """The judge MODEL over API; a missing key is an error unless a base URL is given."""
    if api not in APIS:
        raise ValueError(f"--judge-api {api!r}: expected one of {', '.join(APIS)}")
    env = os.environ if environ is None else environ
    key = env.get(KEY_VARIABLE[api]) or None
    if key is None and base_url is None:
        raise ValueError(
            f"--judge-api {api}: {KEY_VARIABLE[api]} is not set; set it, or give "
            "--judge-base-url for a server that needs no key"
        )
    base = (base_url or DEFAULT_BASE[api]).rstrip("/")
    return ApiAsker(api, model, base, key, prices.get(model), timeout)
