"""A dated price table (`--agentbench-prices prices.toml`) to put dollars on token counts.

Used only where a CLI reports tokens but no trustworthy cost. Without a price for the model,
cost stays unknown (None), never 0. The table is dated because prices change:

    ["gpt-5.1-codex"]
    as_of = "2026-11-01"
    input = 1.25          # USD per million input tokens (uncached part)
    cached_input = 0.125  # USD per million cached input tokens
    output = 10.0         # USD per million output tokens (reasoning included)
    cache_write = 1.5625  # optional: USD per million input tokens written to the cache

Without `cache_write`, tokens written to the cache cost the input rate (as OpenAI bills
them); with it, they cost that rate, and a round whose cache writes went unreported has an
unknown cost.
"""

from __future__ import annotations

import datetime
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.agents.base import TokenUsage

PRICE_FIELDS = ("input", "cached_input", "output")
OPTIONAL_FIELDS = ("cache_write",)


class PriceTableError(ValueError):
    """A price table that cannot be used; the message names the file, the field and the fix."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens for one model, as of a date."""

    as_of: str
    input: float
    cached_input: float
    output: float
    cache_write: float | None = None  # None: cache writes cost the input rate

    def cost(self, tokens: TokenUsage | None) -> float | None:
        """Dollars for these tokens; None when a count the price needs is unknown."""
        if tokens is None or tokens.input is None or tokens.output is None:
            return None
        cached = tokens.cached_input
        if cached is None:
            return None
        writes = 0.0
        uncached = tokens.input - cached
        if self.cache_write is not None:
            if tokens.cache_write is None:
                return None
            uncached -= tokens.cache_write
            writes = tokens.cache_write * self.cache_write
        return (
            uncached * self.input
            + cached * self.cached_input
            + writes
            + tokens.output * self.output
        ) / 1_000_000


def load_prices(path: Path) -> dict[str, Price]:
    """Model -> Price from a TOML file; each model needs as_of, input, cached_input, output."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PriceTableError(f"{path}: cannot read the price table: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PriceTableError(f"{path}: invalid TOML: {exc}") from None
    prices: dict[str, Price] = {}
    for model, entry in data.items():
        if not isinstance(entry, dict):
            raise PriceTableError(
                f'{path}: {model!r} must be a table (["{model}"] with as_of, input, '
                "cached_input, output)"
            )
        as_of = entry.get("as_of")
        if isinstance(as_of, datetime.date):
            as_of = as_of.isoformat()
        if not isinstance(as_of, str) or not as_of:
            raise PriceTableError(
                f'{path}: [{model}] needs as_of = "YYYY-MM-DD" (the date the prices were read)'
            )
        values = {}
        for key in (*PRICE_FIELDS, *(k for k in OPTIONAL_FIELDS if k in entry)):
            value = entry.get(key)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise PriceTableError(
                    f"{path}: [{model}] field {key!r} must be a number >= 0 "
                    f"(USD per million tokens), got {value!r}"
                )
            values[key] = float(value)
        unknown = sorted(set(entry) - {"as_of", *PRICE_FIELDS, *OPTIONAL_FIELDS})
        if unknown:
            raise PriceTableError(
                f"{path}: [{model}] unknown field(s) {', '.join(unknown)}; "
                f"allowed: as_of, {', '.join((*PRICE_FIELDS, *OPTIONAL_FIELDS))}"
            )
        prices[model] = Price(as_of=as_of, **values)
    return prices
