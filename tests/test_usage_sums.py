"""Property: a model call's figures are checked and summed the same way whatever path
they take. `protocol.model_call` and `usage_of` pass the usual figures (counts as ints,
amounts as floats, in range) without a check per figure; every other value must still be
checked, converted and refused exactly as `counted` and `amount` do, one by one.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from proctor.core.results import Usage, amount, counted
from proctor.core.trace import TraceEvent
from proctor.env import protocol
from proctor.run.trial import usage_of

#: Figures an agent may report: the usual ones, and every kind that must be refused or
#: converted (a bool, a negative, NaN, an infinity, an int amount, text, a float count).
FIGURES = st.one_of(
    st.none(),
    st.integers(-3, 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(0, 5),
    st.booleans(),
    st.sampled_from(["3", -0.0, 0, 0.0]),
)
COUNTS = st.one_of(st.integers(0, 10**6), FIGURES)
AMOUNTS = st.one_of(st.floats(0, 5), FIGURES)


FIELDS = (("input_tokens", counted), ("output_tokens", counted), ("cost_usd", amount))


def figure(value: Any, name: str, check: Any) -> Any:
    return None if value is None else check(value, name)


def checked_one_by_one(records: list[dict[str, Any]]) -> Usage:
    """The sums as a loop checks them: each figure of each call, in order; a figure some
    calls reported and some did not is partial (its sum a lower bound)."""
    sums: dict[str, Any] = {"input_tokens": None, "output_tokens": None, "cost_usd": None}
    left_out: set[str] = set()
    for record in records:
        for name, check in FIELDS:
            value = figure(record.get(name), name, check)
            if value is not None:
                sums[name] = value if sums[name] is None else sums[name] + value
            else:
                left_out.add(name)
    partial = tuple(name for name, _ in FIELDS if name in left_out and sums[name] is not None)
    return Usage(**sums, model_calls=len(records), partial=partial) if records else Usage()


def outcome(fn: Any, *args: Any) -> Any:
    """What `fn` returns, with each value's type (1 is not 1.0), or the error it raised."""
    try:
        value = fn(*args)
    except (ValueError, TypeError) as exc:
        return type(exc)
    fields = value.items() if isinstance(value, dict) else vars_of(value)
    return [
        (key, type(v), "nan" if isinstance(v, float) and math.isnan(v) else v) for key, v in fields
    ]


def vars_of(usage: Usage) -> list[tuple[str, Any]]:
    return [(name, getattr(usage, name)) for name in usage.__slots__]


records = st.lists(
    st.fixed_dictionaries(
        {}, optional={"input_tokens": COUNTS, "output_tokens": COUNTS, "cost_usd": AMOUNTS}
    ),
    max_size=6,
)


@settings(max_examples=400, deadline=None)
@given(records)
def test_usage_of_sums_and_refuses_as_a_check_per_figure_does(calls: list[dict[str, Any]]) -> None:
    events = [TraceEvent(i + 1, 0.0, "model_call", call) for i, call in enumerate(calls)]
    events.insert(0, TraceEvent(0, 0.0, "note", {"cost_usd": -1}))  # not a model call
    assert outcome(usage_of, events) == outcome(checked_one_by_one, calls)


@settings(max_examples=400, deadline=None)
@given(COUNTS, COUNTS, AMOUNTS, AMOUNTS)
@example(300, 12, math.inf, 0.3)  # one bad figure among usual ones
@example(300, 12, 0.1, math.nan)
@example(300, -1, 0.1, 0.3)
@example(300, True, 0.1, 0.3)
def test_a_model_call_record_is_checked_as_a_check_per_figure_does(
    tokens_in: Any, tokens_out: Any, cost: Any, latency: Any
) -> None:
    def one_by_one() -> dict[str, Any]:
        try:
            return {
                "model": "m",
                "input_tokens": figure(tokens_in, "input_tokens", counted),
                "output_tokens": figure(tokens_out, "output_tokens", counted),
                "cost_usd": figure(cost, "cost_usd", amount),
                "latency_s": figure(latency, "latency_s", amount),
                "simulated": True,
            }
        except ValueError as exc:
            raise protocol.ProtocolError(str(exc)) from None

    made = outcome(
        protocol.model_call, "m", tokens_in, tokens_out, cost, latency, {"simulated": True}
    )
    assert made == outcome(one_by_one)


def test_the_usual_figures_pass_as_they_are() -> None:
    """The case the fast path serves must not be refused (a loop that refuses all would
    agree with itself)."""
    record = protocol.model_call("m", 300, 12, 0.0012, 0.31, {})
    assert record == {
        "model": "m",
        "input_tokens": 300,
        "output_tokens": 12,
        "cost_usd": 0.0012,
        "latency_s": 0.31,
    }
    events = [TraceEvent(1, 0.0, "model_call", record), TraceEvent(2, 0.0, "model_call", record)]
    assert usage_of(events) == Usage(600, 24, 0.0024, 2)
    with pytest.raises(ValueError, match="cost_usd"):
        usage_of([TraceEvent(1, 0.0, "model_call", {"cost_usd": math.inf})])


@settings(max_examples=400, deadline=None)
@given(COUNTS, COUNTS, AMOUNTS, COUNTS, st.booleans())
@example(300, 12, 0.25, 2, False)  # the usual figures: taken as they are
@example(300, 12, 1, 2, False)  # an int cost: converted to a float, as `amount` does
@example(300, 12, 0.25, True, False)  # a bool count: refused
def test_an_agents_usage_is_checked_as_a_check_per_figure_does(
    tokens_in: Any, tokens_out: Any, cost: Any, calls: Any, marked: bool
) -> None:
    """`protocol.usage` takes the usual figures without a check per figure; whatever an
    agent put in its Usage comes out as `Usage.checked` makes it (its `partial` mark
    dropped: the trace's calls decide that), or is refused as a protocol error."""
    returned = Usage(tokens_in, tokens_out, cost, calls)
    if marked:
        returned.partial = ("cost_usd",)
    fields = {"input_tokens": tokens_in, "output_tokens": tokens_out, "cost_usd": cost}

    def one_by_one() -> Usage:
        try:
            return Usage.checked({**fields, "model_calls": calls})
        except ValueError as exc:
            raise protocol.ProtocolError(f"usage: {exc}") from None

    assert outcome(protocol.usage, returned) == outcome(one_by_one)
