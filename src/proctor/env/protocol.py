"""The agent's side of the contract, checked where its values enter the harness.

An agent is code proctor did not write. What it hands the toolbox (a tool name and its
arguments, a model-call record) and what it returns (an answer, usage) must be plain
data: JSON values without cycles, NaN or foreign objects; counts that are integers; costs
and latencies that are finite and not negative. Anything else is a protocol error: the
agent's failure (a `failed` trial with an `agent_protocol` check), never a crash of the
run or a row the store cannot write (docs/architecture.md, Verdicts).

Values are walked by exact type, so no method of an agent's own object (a `dict`
subclass, a `__str__`) ever runs in the harness's thread.
"""

from __future__ import annotations

import math
from typing import Any

from proctor.core.results import USAGE_FIELDS, Usage, amount, counted, shown

#: Deeper nesting than this is refused: a cyclic value would otherwise never end.
MAX_DEPTH = 100
_INF = math.inf  # a name, not an attribute looked up twice a model call


class ProtocolError(TypeError):
    """The agent broke the toolbox's contract; raised into the agent, recorded, and the
    trial fails even if the agent catches it."""


class _Bad(Exception):
    def __init__(self, path: list[str], why: str) -> None:
        self.path, self.why = path, why


def plain(value: Any, where: str, *about: Any) -> Any:
    """A plain copy of a JSON value; ProtocolError names the first part that is not one,
    after `where` formatted with `about` (only then: a place is named once it is wrong)."""
    try:
        return _plain(value, 0)
    except _Bad as bad:
        place = where.format(*about)
        raise ProtocolError(f"{place}{''.join(reversed(bad.path))}: {bad.why}") from None


def _plain(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if not math.isfinite(value):
            raise _Bad([], f"{value} is not a JSON number")
        return value
    if depth >= MAX_DEPTH:
        raise _Bad([], f"nested deeper than {MAX_DEPTH} levels (a value that contains itself?)")
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _Bad([], f"key {shown(key)} is not a string")
            leaf = type(item)
            if leaf is str or leaf is int or leaf is bool or item is None:  # no call for these
                out[key] = item
                continue
            try:
                out[key] = _plain(item, depth + 1)
            except _Bad as bad:
                bad.path.append(f".{key}")
                raise
        return out
    if kind is list or kind is tuple:
        items = []
        for index, item in enumerate(value):
            try:
                items.append(_plain(item, depth + 1))
            except _Bad as bad:
                bad.path.append(f"[{index}]")
                raise
        return items
    raise _Bad([], f"{shown(value)} is not a JSON value")


def text(value: Any, where: str) -> str:
    """`value` as text: a `str` (a subclass is copied without its methods), None as ""."""
    if type(value) is str:
        return value
    if value is None:
        return ""
    if isinstance(value, str):
        return str.__str__(value)
    raise ProtocolError(f"{where}: {shown(value)} is not text")


def tool_call(name: Any, args: Any) -> tuple[str, Any]:
    """A tool call's name and a plain copy of its arguments (None: no arguments)."""
    if type(name) is not str:
        raise ProtocolError(f"tool name: {shown(name)} is not a string")
    return name, {} if args is None else plain(args, "arguments of {!r}", name)


def model_call(
    model: Any, input_tokens: Any, output_tokens: Any, cost_usd: Any, latency_s: Any, extra: Any
) -> dict[str, Any]:
    """A model-call record as the trace keeps it; an unreported figure stays None."""
    name = model if type(model) is str else text(model, "model")
    usual = (  # counts as ints, amounts as floats, all in range: nothing to convert
        type(input_tokens) is int
        and type(output_tokens) is int
        and type(cost_usd) is float
        and type(latency_s) is float
        and input_tokens >= 0
        and output_tokens >= 0
        and 0.0 <= cost_usd < _INF  # not NaN, not infinite
        and 0.0 <= latency_s < _INF
    )
    if not usual:
        try:
            input_tokens = None if input_tokens is None else counted(input_tokens, "input_tokens")
            output_tokens = (
                None if output_tokens is None else counted(output_tokens, "output_tokens")
            )
            cost_usd = None if cost_usd is None else amount(cost_usd, "cost_usd")
            latency_s = None if latency_s is None else amount(latency_s, "latency_s")
        except ValueError as exc:
            raise ProtocolError(f"model call: {exc}") from None
    return {
        "model": name,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost_usd": cost_usd,
        "latency_s": latency_s,
        **plain(extra, "model call"),
    }


def usage(value: Any) -> Usage:
    """The usage an agent returned, checked field by field (an exact Usage, not a lookalike)."""
    if type(value) is not Usage:
        raise ProtocolError(f"usage: {shown(value)} is not a proctor Usage")
    tokens_in, tokens_out, cost, calls = (
        value.input_tokens,
        value.output_tokens,
        value.cost_usd,
        value.model_calls,
    )
    if (  # the usual figures, in range: Usage.checked's result, without a call a figure
        (tokens_in is None or (type(tokens_in) is int and tokens_in >= 0))
        and (tokens_out is None or (type(tokens_out) is int and tokens_out >= 0))
        and (calls is None or (type(calls) is int and calls >= 0))
        and (cost is None or (type(cost) is float and 0.0 <= cost < _INF))
    ):
        return Usage(tokens_in, tokens_out, cost, calls)
    try:
        return Usage.checked({name: getattr(value, name) for name in USAGE_FIELDS})
    except ValueError as exc:
        raise ProtocolError(f"usage: {exc}") from None
