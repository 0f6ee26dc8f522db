"""Reference-trajectory matching: every order mode, every args mode, and the input forms."""

from __future__ import annotations

import itertools
import random
from types import SimpleNamespace
from typing import Any

import pytest

from proctor import Domain
from proctor.core.trace import Trace
from proctor.grade.match import ARGS_MODES, ORDER_MODES, match_trajectory
from proctor.tasks.predicates import matches
from trial_run import run_task


def c(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


A, B, C = c("a"), c("b"), c("c")


# -- order modes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "reference", "expected"),
    [
        ([A, B], [A, B], True),
        ([], [], True),
        ([B, A], [A, B], False),  # reordered
        ([A, B, C], [A, B], False),  # extra call
        ([A], [A, B], False),  # missing call
        ([A, A], [A, A], True),
    ],
)
def test_exact(actual: list, reference: list, expected: bool) -> None:
    assert match_trajectory(actual, reference, order="exact") is expected


@pytest.mark.parametrize(
    ("actual", "reference", "expected"),
    [
        ([A, B], [A, B], True),
        ([A, C, B, C], [A, B], True),  # extras in between and after
        ([C, A, B], [A, B], True),  # extra before
        ([B, A], [A, B], False),  # wrong relative order
        ([A, C], [A, B], False),  # missing call
        ([A, B], [], True),  # empty reference
        ([A, B], [A, A], False),  # duplicate in reference needs two occurrences
        ([A, B, A], [A, A], True),
        ([B, A, B], [A, B], True),  # earliest B is skipped because it precedes A
    ],
)
def test_in_order(actual: list, reference: list, expected: bool) -> None:
    assert match_trajectory(actual, reference, order="in_order") is expected


def test_in_order_is_the_default() -> None:
    assert match_trajectory([A, C, B], [A, B])
    assert not match_trajectory([B, A], [A, B])


@pytest.mark.parametrize("order", ["any_order", "superset"])
@pytest.mark.parametrize(
    ("actual", "reference", "expected"),
    [
        ([B, A], [A, B], True),  # order ignored
        ([C, B, A, C], [A, B], True),  # extras allowed
        ([A, C], [A, B], False),  # missing call
        ([A], [A, A], False),  # reference has the call twice, actual once
        ([A, A], [A, A], True),  # ... twice
        ([A, B, A], [A, A], True),
        ([], [], True),
        ([A], [], True),
    ],
)
def test_any_order_and_superset_coincide(
    order: str, actual: list, reference: list, expected: bool
) -> None:
    assert match_trajectory(actual, reference, order=order) is expected


@pytest.mark.parametrize(
    ("actual", "reference", "expected"),
    [
        ([B, A], [A, B], True),
        ([A, B, C], [A, B], False),  # extra call
        ([A], [A, B], False),  # missing call
        ([A], [A, A], False),
        ([A, A], [A, A], True),
        ([A, B], [A, A], False),  # same length, wrong multiset
        ([], [], True),
    ],
)
def test_unordered(actual: list, reference: list, expected: bool) -> None:
    assert match_trajectory(actual, reference, order="unordered") is expected


@pytest.mark.parametrize(
    ("actual", "reference", "expected"),
    [
        ([B, A], [A, B], True),
        ([B], [A, B, C], True),  # skipped some reference calls
        ([], [A, B], True),
        ([A, C], [A, B], False),  # a call outside the reference
        ([A, A], [A, B], False),  # reference allows A once only
        ([A, A], [A, B, A], True),
    ],
)
def test_subset(actual: list, reference: list, expected: bool) -> None:
    assert match_trajectory(actual, reference, order="subset") is expected


# -- args modes ---------------------------------------------------------------------------

REF = c("f", x=1, y="s")


@pytest.mark.parametrize(
    ("mode", "actual", "expected"),
    [
        ("exact", c("f", y="s", x=1), True),  # key order irrelevant
        ("exact", c("f", x=1), False),
        ("exact", c("f", x=1, y="s", z=0), False),
        ("exact", c("f", x=2, y="s"), False),
        ("ignore", c("f", q=[1, 2]), True),
        ("ignore", c("f"), True),
        ("superset", c("f", x=1, y="s", z=0), True),  # actual has extra args
        ("superset", c("f", x=1, y="s"), True),
        ("superset", c("f", x=1), False),  # actual lacks a reference arg
        ("superset", c("f", x=2, y="s", z=0), False),
        ("subset", c("f", x=1), True),  # actual gives only some reference args
        ("subset", c("f"), True),
        ("subset", c("f", x=1, y="s"), True),
        ("subset", c("f", x=1, z=0), False),  # an arg the reference does not have
        ("subset", c("f", x=2), False),
    ],
)
def test_args_modes(mode: str, actual: dict, expected: bool) -> None:
    assert match_trajectory([actual], [REF], order="exact", args=mode) is expected


@pytest.mark.parametrize("mode", ARGS_MODES)
def test_names_must_always_match(mode: str) -> None:
    assert not match_trajectory([c("g", x=1, y="s")], [REF], order="exact", args=mode)
    assert not match_trajectory([c("F", x=1, y="s")], [REF], order="exact", args=mode)


@pytest.mark.parametrize("mode", ["exact", "subset", "superset"])
def test_json_equality_of_values(mode: str) -> None:
    def ok(a: Any, r: Any) -> bool:
        return match_trajectory([c("f", v=a)], [c("f", v=r)], order="exact", args=mode)

    assert not ok(True, 1)
    assert not ok(1, True)
    assert not ok(0, False)
    assert ok(1, 1.0)
    assert ok({"p": [1, {"q": 2.0}], "r": None}, {"r": None, "p": [1.0, {"q": 2}]})
    assert not ok({"p": [True]}, {"p": [1]})


@pytest.mark.parametrize("mode", ["exact", "subset", "superset"])
def test_reference_values_are_expectations(mode: str) -> None:
    """Values compare as every expectation does (proctor.tasks.predicates), not as bytes."""

    def ok(a: Any, r: Any) -> bool:
        return match_trajectory([c("f", v=a)], [c("f", v=r)], order="exact", args=mode)

    assert ok("  Cancelled ", "cancelled")
    assert ok(5, {"$gte": 3}) and not ok(2, {"$gte": 3})
    assert ok("B-7", {"$in": ["a-1", "b-7"]})
    assert ok({"p": "Yes"}, {"p": {"$regex": "^Y"}})
    assert not ok("cancel", "cancelled")


# -- optimal assignment, not greedy first-fit ---------------------------------------------


def greedy_any_order(actual: list[dict], reference: list[dict]) -> bool:
    """The wrong algorithm: each reference call takes the first unused actual call that fits."""
    used: set[int] = set()
    for ref in reference:
        for i, act in enumerate(actual):
            fits = act["name"] == ref["name"] and all(
                k in act["args"] and matches(act["args"][k], v) for k, v in ref["args"].items()
            )
            if i not in used and fits:
                used.add(i)
                break
        else:
            return False
    return True


GREEDY_TRAP_ACTUAL = [c("f", a=1, b=2), c("f", c=3)]
# `f()` fits both actual calls, so first-fit gives it the first, which `f(a=1)` needed.
GREEDY_TRAP_REFERENCE = [c("f"), c("f", a=1)]


def test_greedy_trap_is_meaningful() -> None:
    assert not greedy_any_order(GREEDY_TRAP_ACTUAL, GREEDY_TRAP_REFERENCE)


@pytest.mark.parametrize("order", ["any_order", "superset", "unordered"])
def test_assignment_beats_greedy(order: str) -> None:
    assert match_trajectory(GREEDY_TRAP_ACTUAL, GREEDY_TRAP_REFERENCE, order, "superset")


def test_subset_order_uses_assignment_too() -> None:
    # Mirror image: actual `f()` fits both references under args="subset"; first-fit would
    # give it `f(a=1)`, leaving actual `f(a=1)` nothing. Reference has one spare call.
    actual = [c("f"), c("f", a=1)]
    reference = [c("f", a=1, b=2), c("f", c=3), c("g")]
    assert match_trajectory(actual, reference, order="subset", args="subset")


def _brute(actual: list[dict], reference: list[dict], order: str, args: str) -> bool:
    """The spec by enumeration of every embedding: tiny inputs only."""

    def same(a: dict, r: dict) -> bool:
        return match_trajectory([a], [r], order="exact", args=args)

    def embeds(refs: list[dict], acts: list[dict], ordered: bool) -> bool:
        """Do the calls `refs` go into distinct `acts` (by position, increasing if ordered)?"""
        pick = itertools.combinations if ordered else itertools.permutations
        return any(
            all(same(acts[i], r) for i, r in zip(idx, refs, strict=True))
            for idx in pick(range(len(acts)), len(refs))
        )

    if order == "in_order":
        return embeds(reference, actual, ordered=True)
    if order == "subset":  # each actual call into a distinct reference call
        return any(
            all(same(a, reference[j]) for a, j in zip(actual, idx, strict=True))
            for idx in itertools.permutations(range(len(reference)), len(actual))
        )
    if order == "unordered" and len(actual) != len(reference):
        return False
    return embeds(reference, actual, ordered=False)


@pytest.mark.parametrize("args", ARGS_MODES)
@pytest.mark.parametrize("order", ["in_order", "any_order", "superset", "unordered", "subset"])
def test_agrees_with_brute_force(order: str, args: str) -> None:
    rng = random.Random(f"{order}/{args}")
    pool = [c("f"), c("f", a=1), c("f", b=2), c("f", a=1, b=2), c("f", a=True), c("g")]
    for _ in range(300):
        actual = rng.choices(pool, k=rng.randint(0, 4))
        reference = rng.choices(pool, k=rng.randint(0, 4))
        expected = _brute(actual, reference, order, args)
        assert match_trajectory(actual, reference, order, args) is expected, (actual, reference)


# -- input forms --------------------------------------------------------------------------


def test_tool_alias_and_missing_args() -> None:
    assert match_trajectory([{"tool": "a"}], [{"name": "a", "args": {}}], order="exact")
    assert match_trajectory([{"tool": "f", "args": {"x": 1}}], [c("f", x=1)], order="exact")
    assert match_trajectory([{"name": "a", "args": None}], [A], order="exact")


def test_attribute_objects() -> None:
    actual = [SimpleNamespace(name="f", args={"x": 1}), SimpleNamespace(tool="a", args={})]
    assert match_trajectory(actual, [c("f", x=1), A], order="exact")
    assert not match_trajectory(actual, [c("f", x=2), A], order="exact")


RECORDED = Domain("recorded")


@RECORDED.tool("f")
def f(state: dict[str, Any], x: int) -> int:
    """Echo x."""
    return x


@RECORDED.tool("a")
def a(state: dict[str, Any]) -> str:
    """Say a."""
    return "a"


def recorded_trace() -> Trace:
    """A real gateway's trace: f(x=1) reaches the tool; `a` is denied by the policy,
    f(x="seven") is rejected by validation, the second f(x=1) meets an injected timeout."""

    def agent(input: Any, toolbox: Any) -> str:
        toolbox.call("f", {"x": 1})
        toolbox.call("a", {})
        toolbox.call("f", {"x": "seven"})
        toolbox.call("f", {"x": 1})
        return "done"

    task = {
        "prompt": "Call f.",
        "policy": {"a": "deny"},
        "faults": [{"tool": "f", "error": "timeout", "call": 2}],
    }
    return run_task(task, RECORDED, agent).trace


def test_trace_input_counts_only_calls_that_reached_the_tool() -> None:
    trace = recorded_trace()
    assert [e.data["tool"] for e in trace.of_kind("tool_proposal")] == ["f", "a", "f", "f"]
    assert match_trajectory(trace, [c("f", x=1)], order="exact")
    assert not match_trajectory(trace, [c("f", x=1), A], order="in_order")  # `a` was denied
    assert not match_trajectory(trace, [c("f", x=1), c("f", x=1)], order="any_order")
    assert match_trajectory([c("f", x=1.0)], trace, order="unordered")
    assert match_trajectory(trace, trace, order="exact")
    assert match_trajectory(Trace("t", "t"), [], order="exact")


def test_reference_predicates_are_validated() -> None:
    with pytest.raises(ValueError, match="unknown operator `\\$gtee`"):
        match_trajectory([c("f", x=1)], [c("f", x={"$gtee": 0})])


# -- errors -------------------------------------------------------------------------------


def test_unknown_order_mode() -> None:
    with pytest.raises(ValueError, match="unknown order mode 'sorted'") as err:
        match_trajectory([A], [A], order="sorted")
    assert all(mode in str(err.value) for mode in ORDER_MODES)


def test_unknown_args_mode() -> None:
    with pytest.raises(ValueError, match="unknown args mode 'loose'") as err:
        match_trajectory([A], [A], args="loose")
    assert all(mode in str(err.value) for mode in ARGS_MODES)


def test_call_without_name() -> None:
    with pytest.raises(ValueError, match="name"):
        match_trajectory([{"args": {}}], [A])
