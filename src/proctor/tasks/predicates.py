"""Argument and value predicates: expectations are predicates, not bytes.

A literal means equality after normalisation (strings compared trimmed and case-folded,
numbers by value, `true` never equal to `1`); a mapping whose keys all start with `$` is
an operator: `$regex`, `$in`, `$nin`, `$gte`, `$gt`, `$lte`, `$lt`, `$ne`, `$contains`, `$any`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from proctor.core.jsonvalues import MISSING, json_equal

OPERATORS = frozenset(
    {"$regex", "$in", "$nin", "$gte", "$gt", "$lte", "$lt", "$ne", "$contains", "$any"}
)


def is_operator(expected: Any) -> bool:
    return isinstance(expected, dict) and bool(expected) and all(k in OPERATORS for k in expected)


def normalize(value: Any) -> Any:
    """Normal form for literal comparison: trimmed, case-folded strings; numbers by value."""
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalize(v) for v in value]
    return value


def literal_equal(actual: Any, expected: Any) -> bool:
    """Equality after normalisation; inside containers each item is a predicate again,
    so an operator nested in a literal keeps its argument as written. Other values
    (numbers, booleans, null) compare as JSON data does (`json_equal`)."""
    a, e = actual, expected
    if isinstance(a, str) and isinstance(e, str):
        return normalize(a) == normalize(e)
    if isinstance(e, dict) and isinstance(a, dict):
        return a.keys() == e.keys() and all(matches(a[k], e[k]) for k in e)
    if isinstance(e, list | tuple) and isinstance(a, list | tuple):
        return len(a) == len(e) and all(matches(x, y) for x, y in zip(a, e, strict=True))
    return json_equal(a, e)


@lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return None


def _apply(op: str, arg: Any, actual: Any) -> bool:
    if op == "$any":
        return (actual is not MISSING) == bool(arg)
    if actual is MISSING:
        return op in ("$ne", "$nin")
    if op == "$regex":
        return isinstance(actual, str) and _regex(str(arg)).search(actual) is not None
    if op == "$in":
        return any(literal_equal(actual, option) for option in arg)
    if op == "$nin":
        return not any(literal_equal(actual, option) for option in arg)
    if op == "$ne":
        return not literal_equal(actual, arg)
    if op == "$contains":
        if isinstance(actual, str):
            return normalize(str(arg)) in normalize(actual)
        if isinstance(actual, list):
            return any(matches(item, arg) for item in actual)
        if isinstance(actual, dict):
            return arg in actual
        return False
    a, b = _number(actual), _number(arg)
    if a is None or b is None:
        return False
    return {"$gte": a >= b, "$gt": a > b, "$lte": a <= b, "$lt": a < b}[op]


def matches(actual: Any, expected: Any) -> bool:
    """Does `actual` satisfy `expected` (a literal or an operator mapping)?"""
    if is_operator(expected):
        return all(_apply(op, arg, actual) for op, arg in expected.items())
    if actual is MISSING:
        return False
    return literal_equal(actual, expected)


def args_match(actual: dict[str, Any], expected: dict[str, Any] | None) -> bool:
    """Each named argument satisfies its predicate; arguments not named are free."""
    if not expected:
        return True
    return all(matches(actual.get(k, MISSING), v) for k, v in expected.items())


def mismatched_args(actual: dict[str, Any], expected: dict[str, Any] | None) -> list[str]:
    """Names of the expected arguments that `actual` does not satisfy, for evidence."""
    if not expected:
        return []
    return [k for k, v in expected.items() if not matches(actual.get(k, MISSING), v)]
