"""What a model call costs: a per-model price table the user can extend.

Providers report tokens, not money; cost per task is a headline metric, so every adapter
prices its calls the same way. The defaults are list prices in USD per million tokens at
the time of writing: check them, and override or extend them with `PriceTable.load`
(`--agent 'chat:MODEL?prices=FILE'`, or the `PROCTOR_PRICES` environment variable).

Costs are recorded in USD. A price table may also name the currency its user reports in,
with the conversion rate (`currency: {code: EUR, per_usd: 0.92}`): gates and scorecards
then accept cost metrics in that currency (`p95_cost_eur`) and reports show both. No
rate is built in: exchange rates move, and a stale one would be a number typed by hand.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from proctor.core.documents import read_yaml
from proctor.core.results import Currency, Usage
from proctor.env.toolbox import ToolboxBase

PRICES_ENV = "PROCTOR_PRICES"

#: USD per million tokens, (input, output).
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "gemini-2.0-flash": (0.10, 0.40),
    "gemini-2.5-pro": (1.25, 10.00),
}


#: The key of a price file that holds the reporting currency instead of a model's prices.
CURRENCY_KEY = "currency"


class PriceTable:
    """Prices by model name; `gpt-4o-2024-08-06` finds `gpt-4o` (the longest known prefix)."""

    def __init__(
        self,
        prices: Mapping[str, tuple[float, float]] | None = None,
        *,
        defaults: bool = True,
        currency: Currency | None = None,
    ) -> None:
        self.prices: dict[str, tuple[float, float]] = dict(DEFAULT_PRICES) if defaults else {}
        self.prices.update({k.lower(): v for k, v in (prices or {}).items()})
        self.currency = currency

    def price(self, model: str) -> tuple[float, float] | None:
        name = model.lower().rsplit("/", 1)[-1]
        name = name.split(":", 1)[1] if name.startswith(("openai:", "anthropic:")) else name
        if name in self.prices:
            return self.prices[name]
        known = [k for k in self.prices if name.startswith(k + "-")]
        return self.prices[max(known, key=len)] if known else None

    def cost(self, model: str, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """USD for one call, or None ("not measured") for a model the table does not know
        or a token count not reported."""
        price = self.price(model)
        if price is None or input_tokens is None or output_tokens is None:
            return None
        return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000

    @classmethod
    def load(cls, path: str | Path) -> PriceTable:
        """A YAML/JSON file `{MODEL: {input: USD, output: USD}}` (per million tokens) over
        the defaults, and optionally `currency: {code, per_usd}`; a bad file is a
        ValueError with one line for the user."""
        path = Path(path)
        data = read_yaml(path)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: prices must map model names to {{input, output}}")
        currency = None
        if CURRENCY_KEY in data:
            try:
                currency = Currency.parse(data.pop(CURRENCY_KEY))
            except ValueError as exc:
                raise ValueError(f"{path}: {CURRENCY_KEY}: {exc}") from None
        prices: dict[str, tuple[float, float]] = {}
        for model, row in data.items():
            try:
                prices[str(model)] = (float(row["input"]), float(row["output"]))
            except (TypeError, KeyError, ValueError):
                raise ValueError(
                    f"{path}: {model}: expected {{input: USD per 1M, output: USD per 1M}}, "
                    f"got {json.dumps(row, default=str)}"
                ) from None
        return cls(prices, currency=currency)

    @classmethod
    def from_env(cls) -> PriceTable:
        path = os.environ.get(PRICES_ENV)
        return cls.load(path) if path else cls()


#: Tokens one model call may report: more is a broken counter, not a long prompt.
MAX_TOKENS = 100_000_000


def tokens_ok(value: Any) -> bool:
    """A token count proctor trusts: a whole number from 0 to MAX_TOKENS."""
    return type(value) is int and 0 <= value <= MAX_TOKENS


def live_counts(tokens_in: Any, tokens_out: Any) -> tuple[int | None, int | None]:
    """A live call's token counts as its provider reported them; None ("not measured",
    docs/architecture.md, Verdicts) for a count left out or not trusted (`tokens_ok`), and
    for both when both are 0: a completion always reads its prompt, so a server (or an SDK:
    the OpenAI Agents SDK writes a missing usage as zeros) that sends zeros reported
    nothing. An imported log keeps a recorded 0 (traces/imported.py): its producer
    measured it."""
    counts = tuple(n if tokens_ok(n) else None for n in (tokens_in, tokens_out))
    if counts == (0, 0):
        return None, None
    return counts[0], counts[1]


def call_cost(
    prices: PriceTable, model: str, tokens_in: Any, tokens_out: Any
) -> tuple[float | None, bool]:
    """A call's cost, and whether `prices` does not know its model (`unpriced`). Not
    measured (None), never $0, for an unknown model or a count not reported or not
    trusted: no cost is worked out from a broken counter."""
    unpriced = prices.price(model) is None
    if unpriced or not (tokens_ok(tokens_in) and tokens_ok(tokens_out)):
        return None, unpriced
    return prices.cost(model, tokens_in, tokens_out), False


def record_call(
    toolbox: ToolboxBase,
    prices: PriceTable,
    *,
    model: str,
    input_tokens: int | None,
    output_tokens: int | None,
    latency_s: float,
    **extra: Any,
) -> Usage:
    """Record one model call in the trace, its counts as reported (`live_counts`), priced
    (`call_cost`: an unknown model's call is marked `unpriced`)."""
    input_tokens, output_tokens = live_counts(input_tokens, output_tokens)
    cost, unpriced = call_cost(prices, model, input_tokens, output_tokens)
    if unpriced:
        extra["unpriced"] = True
    toolbox.record_model_call(
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost,
        latency_s=round(latency_s, 6),
        **extra,
    )
    return Usage(input_tokens, output_tokens, cost, 1)
