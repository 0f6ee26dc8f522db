"""Numbers compare as numbers: float arguments, outcome values and grounded answers.

Each behaviour is shown through the real gateway, and with the case that would make the
check pass wrongly (a different amount, a number no tool returned) failing beside it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proctor import Domain, ToolError
from proctor.grade.grounding import ungrounded
from proctor.tasks.predicates import matches
from trial_run import checks_of, run_task

SHOP = Domain(
    "shop_numbers",
    base_state={
        "orders": {
            "A-1": {
                "unit_price": 1.1,
                "quantity": 3,
                "refunded": 0.0,
                "discount": 0.5,
                "placed_at": "2024-03-05T10:00:00Z",
                "shipped_ts": 1709805600,  # 2024-03-07T10:00:00Z
                "views": 1234,
            }
        }
    },
)


@SHOP.tool("orders.get", entity="order_id")
def get_order(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    """Read an order, with its computed total."""
    if order_id not in state["orders"]:
        raise ToolError(f"no order {order_id}", code="not_found")
    order = state["orders"][order_id]
    return {**order, "total": order["unit_price"] * order["quantity"]}  # 3.3000000000000003


@SHOP.tool("payments.refund", kind="write", entity="order_id")
def refund(state: dict[str, Any], order_id: str, amount: float) -> dict[str, Any]:
    """Refund part of an order."""
    state["orders"][order_id]["refunded"] += amount
    return {"order_id": order_id, "refunded": amount}


def refunding(*amounts: float, answer: str = "Done.") -> Any:
    def agent(input: Any, toolbox: Any) -> str:
        toolbox.call("orders.get", {"order_id": "A-1"})
        for amount in amounts:
            toolbox.call("payments.refund", {"order_id": "A-1", "amount": amount})
        return answer

    return agent


def refund_task(args: dict[str, Any], equals: Any) -> dict[str, Any]:
    return {
        "prompt": "Refund a third of order A-1.",
        "expect": {
            "trajectory": {"required": [{"tool": "payments.refund", "args": args}]},
            "outcome": [{"path": "orders.A-1.refunded", "equals": equals}],
        },
    }


# -- arguments and outcome values ----------------------------------------------------------


def test_a_float_computed_another_way_is_the_same_number() -> None:
    task = refund_task({"amount": 0.3}, 0.3)
    good = checks_of(run_task(task, SHOP, refunding(0.1 + 0.2)))
    assert good["required:payments.refund"].passed
    assert good["state:orders.A-1.refunded"].passed
    wrong = checks_of(run_task(task, SHOP, refunding(0.31)))
    assert not wrong["required:payments.refund"].passed
    assert not wrong["state:orders.A-1.refunded"].passed


def test_a_sum_that_should_be_zero_is_zero() -> None:
    task = refund_task({"amount": {"$any": True}}, 0)
    assert checks_of(run_task(task, SHOP, refunding(0.1, 0.2, -0.3)))[
        "state:orders.A-1.refunded"
    ].passed
    assert not checks_of(run_task(task, SHOP, refunding(0.1, -0.09)))[
        "state:orders.A-1.refunded"
    ].passed


@pytest.mark.parametrize(
    ("amount", "ok"), [(0.3, True), (0.304, True), (0.296, True), (0.31, False)]
)
def test_approx_takes_the_tolerance_the_task_gives(amount: float, ok: bool) -> None:
    task = refund_task({"amount": {"$approx": 0.3, "tol": 0.005}}, {"$approx": 0.3, "tol": 0.005})
    checks = checks_of(run_task(task, SHOP, refunding(amount)))
    assert checks["required:payments.refund"].passed is ok
    assert checks["state:orders.A-1.refunded"].passed is ok


def test_comparison_bounds_use_the_tolerance() -> None:
    assert matches(0.1 + 0.2, {"$lte": 0.3}) and not matches(0.1 + 0.2, {"$lt": 0.3})
    assert matches(0.1 + 0.2, {"$gte": 0.3}) and not matches(0.1 + 0.2, {"$gt": 0.3})
    assert matches(0.30001, {"$gt": 0.3})


def test_integers_compare_exactly_however_large() -> None:
    assert not matches(10**17 + 1, 10**17)
    assert matches(10**17, 10**17)
    assert matches(3, 3.0) and not matches(True, 1)


@pytest.mark.parametrize(
    ("value", "ok"), [(0.8, True), (0.6, True), (0.7, True), (0.81, False), (0.59, False)]
)
def test_approx_takes_its_edge_as_gte_and_lte_take_their_bounds(value: float, ok: bool) -> None:
    assert matches(value, {"$gte": 0.6, "$lte": 0.8}) is ok
    near = {"$approx": 0.7, "tol": 0.1}
    checks = checks_of(run_task(refund_task({"amount": near}, near), SHOP, refunding(value)))
    assert checks["required:payments.refund"].passed is ok
    assert checks["state:orders.A-1.refunded"].passed is ok


@given(st.integers(-10_000, 10_000), st.integers(1, 1_000), st.sampled_from([10, 100, 1000]))
def test_approx_accepts_target_plus_or_minus_tol_and_nothing_beyond(
    target: int, tol: int, scale: int
) -> None:
    """Decimal figures as a task writes them: target ± tol is in, a step past it is out."""
    t, d = target / scale, tol / scale
    edge_up, edge_down = (target + tol) / scale, (target - tol) / scale
    assert matches(edge_up, {"$approx": t, "tol": d})
    assert matches(edge_down, {"$approx": t, "tol": d})
    past = (target + tol + 1) / scale
    assert not matches(past, {"$approx": t, "tol": d})


def test_relative_approx() -> None:
    assert matches(101, {"$approx": 100, "rel": 0.01})
    assert not matches(102, {"$approx": 100, "rel": 0.01})


# -- grounded answers ----------------------------------------------------------------------


def grounded(answer: str) -> tuple[bool, list[str]]:
    task = {"prompt": "What about order A-1?", "expect": {"answer": {"grounded": True}}}
    check = checks_of(run_task(task, SHOP, refunding(answer=answer)))["grounded"]
    return check.passed, check.evidence["ungrounded"]


@pytest.mark.parametrize(
    "answer",
    [
        "Order A-1 totals $3.30.",  # 3.3000000000000003
        "Order A-1 totals 3.3 for 3 items at $1.10 each.",
        "It was viewed 1,234 times.",
        "It carries a 50% discount.",  # 0.5
        "It carries a discount of 0.50.",
        "It was placed on 2024-03-05 at 10:00.",
        "It was placed on March 5, 2024.",
        "It was placed on 5 March.",
        "It shipped on 2024-03-07.",  # 1709805600
        "It shipped at 2024-03-07T10:00:00Z.",
    ],
)
def test_formats_of_a_returned_number_are_grounded(answer: str) -> None:
    assert grounded(answer) == (True, [])


@pytest.mark.parametrize(
    ("answer", "invented"),
    [
        ("Order A-1 totals $3.40.", ["3.40"]),
        ("Order A-1 totals 4 dollars.", ["4"]),
        ("It was viewed 1,235 times.", ["1,235"]),
        ("It carries a 40% discount.", ["40"]),
        ("It was placed on 2024-03-06.", ["2024-03-06"]),
        ("It was placed on March 6, 2024.", ["March 6, 2024"]),
        ("It shipped at 2024-03-07T11:00:00Z.", ["2024-03-07T11:00:00Z"]),
        ("It ships as B-2.", ["B-2"]),
    ],
)
def test_a_number_no_tool_returned_is_still_ungrounded(answer: str, invented: list[str]) -> None:
    assert grounded(answer) == (False, invented)


def test_a_whole_number_is_not_a_rounded_float() -> None:
    assert ungrounded("About 3 left.", ['{"left": 2.6}']) == ["3"]
    assert ungrounded("About 2.6 left.", ['{"left": 2.6}']) == []
    assert ungrounded("About 3.14 left.", ['{"left": 3.14159}']) == []
    assert ungrounded("About 3.15 left.", ['{"left": 3.14159}']) == ["3.15"]


@given(
    st.integers(min_value=0, max_value=10**9).map(lambda n: n / 100),
    st.integers(min_value=1, max_value=1000),
)
def test_grounding_reads_a_written_amount_and_rejects_any_other(value: float, off: int) -> None:
    source = [f'{{"amount": {value * 3 / 3!r}}}']
    assert ungrounded(f"It costs ${value:,.2f}.", source) == []
    other = value + off / 100
    assert ungrounded(f"It costs ${other:,.2f}.", source) == [f"{other:,.2f}"]
