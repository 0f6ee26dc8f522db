"""`expect.trajectory.reference` in task files: match.py's modes, graded on calls that
reached the tool, arguments compared with the graders' predicates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from proctor.core.documents import SpecError
from proctor.tasks.loader import load_task_file
from trial_run import checks_of, order_desk, run_task

STORE = order_desk("store_ref", {"A-1": {"status": "placed", "total": 0.3}})


@STORE.tool("payments.refund", kind="write", entity="order_id")
def refund(state: dict[str, Any], order_id: str, amount: float) -> dict[str, Any]:
    """Refund an order."""
    return {"order_id": order_id, "amount": amount}


REFERENCE = [
    {"tool": "orders.get", "args": {"order_id": "A-1"}},
    {"tool": "orders.cancel", "args": {"order_id": "a-1"}},
]


def task(order: str = "in_order", args: str = "superset", **fields: Any) -> dict[str, Any]:
    reference = {"calls": REFERENCE, "order": order, "args": args}
    return {"prompt": "Cancel A-1.", "expect": {"trajectory": {"reference": reference}}, **fields}


def calling(*calls: tuple[str, dict[str, Any]]) -> Any:
    def agent(input: Any, toolbox: Any) -> str:
        for name, args in calls:
            toolbox.call(name, args)
        return "Done."

    return agent


GET = ("orders.get", {"order_id": "A-1"})
CANCEL = ("orders.cancel", {"order_id": "A-1", "reason": "asked"})


def reference_check(spec: dict[str, Any], *calls: tuple[str, dict[str, Any]]) -> Any:
    return checks_of(run_task(spec, STORE, calling(*calls)))["reference_trajectory"]


def test_in_order_reference_passes_and_its_reverse_fails() -> None:
    passed = reference_check(task(), GET, CANCEL)
    assert passed.passed and passed.kind == "trajectory"
    failed = reference_check(task(), CANCEL, GET)
    assert not failed.passed
    assert failed.evidence["unmatched_reference"] == [REFERENCE[1]]


def test_a_denied_proposal_is_not_a_call_of_the_reference() -> None:
    """With proposals counted, the denied cancel would complete an any_order match."""
    denied = task("any_order", policy={"orders.cancel": "deny"})
    check = reference_check(denied, CANCEL, GET)
    assert not check.passed
    assert check.evidence["unmatched_reference"] == [REFERENCE[1]]
    assert [c["tool"] for c in check.evidence["not_reaching_tool"]] == ["orders.cancel"]
    assert reference_check(task("any_order"), CANCEL, GET).passed


def test_args_modes_from_the_task_file() -> None:
    assert reference_check(task("exact", "superset"), GET, CANCEL).passed
    exact = reference_check(task("exact", "exact"), GET, CANCEL)  # `reason` is extra
    assert not exact.passed and exact.evidence["unmatched_reference"] == [REFERENCE[1]]
    assert reference_check(
        task("exact", "ignore"), ("orders.get", {"order_id": "B"}), CANCEL
    ).passed
    extra = reference_check(task("exact"), GET, CANCEL, GET)
    assert not extra.passed and extra.evidence["unexpected"][0]["tool"] == "orders.get"


def test_subset_forbids_calls_outside_the_reference() -> None:
    spec = task("subset")
    assert reference_check(spec, GET).passed
    outside = reference_check(spec, GET, ("payments.refund", {"order_id": "A-1", "amount": 1}))
    assert not outside.passed
    assert [c["tool"] for c in outside.evidence["unexpected"]] == ["payments.refund"]


def test_reference_arguments_are_predicates_with_the_numeric_tolerance() -> None:
    spec = {
        "prompt": "Refund 0.3 on A-1.",
        "expect": {
            "trajectory": {
                "reference": {
                    "calls": [{"tool": "payments.refund", "args": {"amount": 0.3}}],
                    "order": "unordered",
                }
            }
        },
    }
    assert reference_check(
        spec, ("payments.refund", {"order_id": "A-1", "amount": 0.1 + 0.2})
    ).passed
    wrong = reference_check(spec, ("payments.refund", {"order_id": "A-1", "amount": 0.31}))
    assert not wrong.passed


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ("    order: sorted\n", "expect.trajectory.reference.order", "in_order"),
        ("    args: loose\n", "expect.trajectory.reference.args", "superset"),
    ],
)
def test_unknown_modes_are_located_load_errors(
    tmp_path: Path, line: str, field: str, message: str
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "id: t\ndomain: store_ref\nprompt: p\nexpect:\n  trajectory:\n    reference:\n"
        "      calls: [orders.get]\n" + line.replace("    ", "      "),
        encoding="utf-8",
    )
    with pytest.raises(SpecError) as err:
        load_task_file(path)
    (problem,) = err.value.problems
    assert problem[1:3] == (8, field) and message in problem[3]
