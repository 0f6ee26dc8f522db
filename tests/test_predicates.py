"""Argument and value predicates: literals after normalisation, and every operator."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proctor.core.jsonvalues import MISSING
from proctor.tasks.predicates import (
    PredicateError,
    _scalar_equal,
    args_match,
    literal_predicate,
    matches,
    mismatched_args,
    normalize,
    parse_predicate,
)

# -- literals -------------------------------------------------------------------------------


def test_normalize_trims_collapses_whitespace_and_casefolds() -> None:
    assert normalize("  Customer \n\t REQUEST ") == "customer request"
    assert normalize({"K": ["A  B", 1]}) == {"K": ["a b", 1]}  # keys are left alone
    assert normalize(("X",)) == ["x"]


@pytest.mark.parametrize(
    ("actual", "expected", "result"),
    [
        ("Cancelled", "cancelled", True),
        ("  cancelled\n", "CANCELLED", True),
        ("customer   request", "Customer Request", True),
        ("cancelled", "canceled", False),
        ("cancelled", "cancel", False),  # equality, not containment
        (1, 1.0, True),
        (1.0, 1, True),
        (2, 2.5, False),
        (True, 1, False),
        (1, True, False),
        (False, 0, False),
        (0, False, False),
        (True, True, True),
        (False, True, False),
        ("1", 1, False),
        (1, "1", False),
        (None, None, True),
        (None, "None", False),
        (None, 0, False),
        ([1, "A-100"], [1.0, "a-100"], True),
        ([1, 2], [1, 2, 3], False),
        ([2, 1], [1, 2], False),
        ([True], [1], False),
        ({"a": 1, "b": "X"}, {"b": "x", "a": 1.0}, True),
        ({"a": 1, "b": 2}, {"a": 1}, False),  # a literal dict is equality: no extra keys
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ("A-100", ["A-100"], False),
        (3, 4, False),  # integers of one type: exact, no tolerance
        (10**18, 10**18 + 1, False),
        (1.0, 1.0 + 1e-12, True),  # floats of one type: within the tolerance
    ],
)
def test_literal_equality(actual: Any, expected: Any, result: bool) -> None:
    assert matches(actual, expected) is result
    assert literal_predicate(expected).test(actual) is result


def test_missing_never_equals_a_literal() -> None:
    assert matches(MISSING, None) is False
    assert matches(MISSING, "") is False
    assert matches(MISSING, 0) is False


def test_a_mapping_with_a_dollar_key_holds_operators_only() -> None:
    with pytest.raises(PredicateError, match="beside an operator"):
        parse_predicate({"$gte": 1, "plain": 2})
    with pytest.raises(PredicateError, match="unknown operator `\\$bogus`"):
        parse_predicate({"$bogus": 1})
    # `$eq` compares a mapping with `$` keys literally.
    assert matches({"$gte": 1, "plain": 2}, {"$eq": {"$gte": 1, "plain": 2}})
    assert not matches(5, {"$eq": {"$gte": 1, "plain": 2}})
    assert matches({}, {}) and not matches({"a": 1}, {})


# -- $regex -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "pattern", "result"),
    [
        ("A-100", r"^A-\d+$", True),
        ("A-10x", r"^A-\d+$", False),
        ("order A-100 please", r"A-\d{3}", True),  # search, not fullmatch
        ("a-100", r"^A-\d+$", False),  # the pattern is case-sensitive
        ("a-100", r"(?i)^A-\d+$", True),
        (100, r"\d+", False),  # only strings can match a regex
        (None, r".*", False),
        (MISSING, r".*", False),
    ],
)
def test_regex(actual: Any, pattern: str, result: bool) -> None:
    assert matches(actual, {"$regex": pattern}) is result


# -- $in / $nin ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "options", "result"),
    [
        ("Refunded", ["cancelled", "refunded"], True),
        ("placed", ["cancelled", "refunded"], False),
        (2.0, [1, 2, 3], True),
        (True, [1, 2], False),  # True is not 1
        (1, [True], False),
        (None, [None, "x"], True),
        (MISSING, [None], False),  # a missing value is in no list
        ("x", [], False),
    ],
)
def test_in(actual: Any, options: list[Any], result: bool) -> None:
    assert matches(actual, {"$in": options}) is result


@pytest.mark.parametrize(
    ("actual", "options", "result"),
    [
        ("placed", ["cancelled", "refunded"], True),
        ("CANCELLED", ["cancelled", "refunded"], False),  # normalised before comparison
        (True, [1], True),
        (MISSING, ["x"], True),  # a missing value is in none of them
        ("x", [], True),
    ],
)
def test_nin(actual: Any, options: list[Any], result: bool) -> None:
    assert matches(actual, {"$nin": options}) is result


# -- comparisons --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "bound", "actual", "result"),
    [
        ("$gte", 10, 10, True),
        ("$gte", 10, 9.99, False),
        ("$gte", 10, 10.5, True),
        ("$gt", 10, 10, False),
        ("$gt", 10, 10.01, True),
        ("$lte", 10, 10.0, True),
        ("$lte", 10, 10.01, False),
        ("$lt", 10, 10, False),
        ("$lt", 10, -3, True),
        ("$gt", 0.5, 1, True),
        # non-numbers fail, whatever the comparison
        ("$gte", 1, "5", False),
        ("$lt", 10, "5", False),
        ("$gte", 1, None, False),
        ("$gte", 1, [5], False),
        ("$gte", 1, MISSING, False),
        ("$lt", 10, MISSING, False),
        # booleans are not numbers, on either side
        ("$gte", 1, True, False),
        ("$lte", 1, False, False),
    ],
)
def test_comparisons(op: str, bound: Any, actual: Any, result: bool) -> None:
    assert matches(actual, {op: bound}) is result


def test_several_operators_must_all_hold() -> None:
    window = {"$gte": 1, "$lt": 5}
    assert matches(1, window)
    assert matches(4.99, window)
    assert not matches(5, window)
    assert not matches(0, window)
    assert matches("A-100", {"$regex": "^A-", "$nin": ["A-200"]})
    assert not matches("A-200", {"$regex": "^A-", "$nin": ["A-200"]})


# -- $ne ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "other", "result"),
    [
        ("placed", "cancelled", True),
        ("Cancelled ", "cancelled", False),  # equal after normalisation
        (1.0, 1, False),
        (True, 1, True),  # True is not 1, so it differs
        (None, None, False),
        (MISSING, "cancelled", True),  # absent differs from any value
        (MISSING, None, True),
    ],
)
def test_ne(actual: Any, other: Any, result: bool) -> None:
    assert matches(actual, {"$ne": other}) is result


# -- $contains ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "needle", "result"),
    [
        # strings: normalised substring
        ("Order A-100 was CANCELLED", "cancelled", True),
        ("Order  A-100", "order a-100", True),
        ("Order A-100", "A-200", False),
        # lists: some item satisfies the predicate (a literal or an operator)
        (["A-100", "B-7"], "a-100", True),
        (["A-100", "B-7"], "A-1", False),  # items compare whole, not as substrings
        ([1, 2, 3], 2.0, True),
        ([1, 2, 3], True, False),
        ([5, 20], {"$gte": 10}, True),
        ([5, 9], {"$gte": 10}, False),
        ([{"sku": "X1", "qty": 2}], {"sku": "x1", "qty": 2}, True),
        ([], "x", False),
        # dicts: key membership
        ({"A-100": {}, "B-7": {}}, "A-100", True),
        ({"A-100": {}}, "B-7", False),
        ({"status": "A-100"}, "A-100", False),  # values are not keys
        # neither string, list nor dict
        (100, 1, False),
        (None, "x", False),
        (MISSING, "x", False),
    ],
)
def test_contains(actual: Any, needle: Any, result: bool) -> None:
    assert matches(actual, {"$contains": needle}) is result


# -- $any ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "flag", "result"),
    [
        ("anything", True, True),
        (None, True, True),  # present, even if null
        (0, True, True),
        (MISSING, True, False),
        (MISSING, False, True),  # `$any: false` asserts absence
        ("anything", False, False),
        (None, False, False),
    ],
)
def test_any(actual: Any, flag: bool, result: bool) -> None:
    assert matches(actual, {"$any": flag}) is result


# -- nested literals ----------------------------------------------------------------------


ADDRESS = {"city": "Paris", "zip": {"$regex": r"^75\d{3}$"}, "floor": {"$gte": 1}}


@pytest.mark.parametrize(
    ("actual", "result"),
    [
        ({"city": " PARIS", "zip": "75011", "floor": 3}, True),
        ({"city": "Paris", "zip": "69001", "floor": 3}, False),  # zip fails its regex
        ({"city": "Paris", "zip": "75011", "floor": 0}, False),  # floor below bound
        ({"city": "Lyon", "zip": "75011", "floor": 3}, False),
        ({"city": "Paris", "zip": "75011"}, False),  # a named key is missing
        ({"city": "Paris", "zip": "75011", "floor": 3, "extra": 1}, False),  # extra key
    ],
)
def test_nested_dict_literal_with_operators_inside(actual: dict[str, Any], result: bool) -> None:
    assert matches(actual, ADDRESS) is result
    assert matches({"shipping": actual}, {"shipping": ADDRESS}) is result


def test_nested_list_literal_with_operators_inside() -> None:
    expected = [{"$gte": 1}, "a-100", {"$in": ["x", "y"]}]
    assert matches([3, "A-100", "Y"], expected)
    assert not matches([0, "A-100", "y"], expected)
    assert not matches([3, "A-100"], expected)


def test_nested_regex_is_not_case_folded() -> None:
    # Top level: `^\D+$` (no digits) matches "abc".
    assert matches("abc", {"$regex": r"^\D+$"})
    # The same predicate one level down must mean the same thing.
    assert matches({"code": "abc"}, {"code": {"$regex": r"^\D+$"}})


def test_nested_regex_is_case_sensitive_like_top_level() -> None:
    assert not matches("ABC", {"$regex": "^[a-z]+$"})
    assert not matches({"c": "ABC"}, {"c": {"$regex": "^[a-z]+$"}})


# -- args_match / mismatched_args ---------------------------------------------------------


def test_args_match_leaves_unnamed_args_free() -> None:
    actual = {"order_id": "A-100", "reason": "customer_request", "notify": True}
    assert args_match(actual, {"order_id": "a-100"})
    assert args_match(actual, {"order_id": "A-100", "reason": {"$regex": "customer"}})
    assert not args_match(actual, {"order_id": "A-200"})
    assert mismatched_args(actual, {"order_id": "a-100"}) == []


def test_args_match_with_no_expectation_accepts_anything() -> None:
    assert args_match({"x": 1}, None)
    assert args_match({}, {})
    assert mismatched_args({"x": 1}, None) == []
    assert mismatched_args({"x": 1}, {}) == []


def test_named_arg_that_is_missing_fails_unless_asserted_absent() -> None:
    assert not args_match({}, {"order_id": "A-100"})
    assert not args_match({"order_id": "A-100"}, {"reason": {"$any": True}})
    assert args_match({"order_id": "A-100"}, {"reason": {"$any": False}})
    assert not args_match({"order_id": "A-100", "reason": "x"}, {"reason": {"$any": False}})
    assert args_match({}, {"reason": {"$ne": "fraud"}})


def test_mismatched_args_names_exactly_the_failing_predicates_in_order() -> None:
    actual = {"order_id": "A-100", "reason": "other", "amount": 5}
    expected = {
        "reason": "customer_request",
        "order_id": "A-100",
        "amount": {"$gte": 10},
        "channel": "email",  # missing from actual
    }
    assert not args_match(actual, expected)
    assert mismatched_args(actual, expected) == ["reason", "amount", "channel"]


@given(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text()),
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text()),
)
def test_a_literal_is_equal_as_normalised_whatever_the_types(actual: Any, expected: Any) -> None:
    """Equal's shortcuts for values of one type agree with the rule for any pair."""
    assert literal_predicate(expected).test(actual) is _scalar_equal(actual, expected)
