"""The store decodes its JSON rows with orjson where that gives what `json` gives.

orjson reads an integer past 64 bits as a float and refuses NaN, infinities and lone
surrogates; the store must still hand back exactly the values `json` would (a trace is
evidence: an account number must not become 1.2345678901234568e+29).
"""

from __future__ import annotations

import json
import marshal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proctor.store.sqlite import _dumps, _loads, loads_all


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types, key order and NaN included (`1` is not `1.0`)."""
    return marshal.dumps(a, 2) == marshal.dumps(b, 2)


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63 - 3, max_value=2**70)
    | st.integers(min_value=-(2**70), max_value=-(2**63) + 3)
    | st.floats()
    | st.text()
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(values)
def test_a_row_decodes_as_json_decodes_it(value: Any) -> None:
    text = _dumps(value)
    assert same(_loads(text), json.loads(text))


@given(st.lists(values, max_size=6))
def test_rows_decoded_together_decode_as_each_alone(batch: list[Any]) -> None:
    texts = [_dumps(value) for value in batch]
    decoded = loads_all(texts)
    assert len(decoded) == len(texts)
    assert all(same(d, json.loads(t)) for d, t in zip(decoded, texts, strict=True))


def test_the_values_orjson_would_read_otherwise() -> None:
    rows = [
        '{"account":123456789012345678901234567890}',  # a float to orjson
        '{"account":-9223372036854775809}',
        '{"cost":0.0007050000000000001}',  # a long fraction: orjson reads it the same
        '{"x":NaN,"y":-Infinity}',
        '"\\ud800"',
        "1E400",
    ]
    for row in rows:
        assert same(_loads(row), json.loads(row)), row
    assert all(same(d, json.loads(r)) for d, r in zip(loads_all(rows), rows, strict=True))
    assert loads_all(rows[:1])[0]["account"] == 123456789012345678901234567890


def test_rows_that_do_not_split_back_are_decoded_one_by_one() -> None:
    """Damaged rows whose text joins into a valid array: of one item, or of three."""
    with pytest.raises(ValueError):  # as `_loads("[1")`; the store calls it damaged
        loads_all(["[1", "2]"])
    assert loads_all(["1,2", "3"]) == [_loads("1,2"), 3]
