"""Robustness graders: duplicates, stray effects, false success, retries, loops, errors.

Most traces are built by hand with the conftest helpers; where the grader reads what only
the real ToolGateway records (a 429's retry-after, `toolbox.wait` notes, idempotency
replays, an `empty` fault) the trace comes from a real `Environment`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conftest import make_ctx, make_task
from proctor import Domain, SyncToolbox, ToolError
from proctor.core.results import Check, verdict
from proctor.core.trace import Trace
from proctor.env import Environment
from proctor.grade import GradeContext
from proctor.grade.claims import claimed
from proctor.grade.robustness import grade_robustness

CANCEL = ("orders.cancel", {"order_id": "A-100"}, "ok", {"status": "cancelled"})
CLAIMS = {"robustness": {"claims": {"cancelled": "orders.cancel"}}}


def by_name(checks: list[Check]) -> dict[str, Check]:
    names = [c.name for c in checks]
    assert len(names) == len(set(names)), names
    return {c.name: c for c in checks}


def grade(ctx: GradeContext) -> dict[str, Check]:
    return by_name(grade_robustness(ctx))


# -- a real gateway, for what only it records -----------------------------------------------

SHOP = Domain("shop", base_state={"orders": {"A-100": {"status": "placed"}}})


@SHOP.tool("orders.get", entity="order_id")
def get_order(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    """Read one order."""
    if order_id not in state["orders"]:
        raise ToolError(f"no order {order_id!r}", code="not_found")
    return state["orders"][order_id]


@SHOP.tool("orders.list")
def list_orders(state: dict[str, Any]) -> list[str]:
    """Every order id."""
    return sorted(state["orders"])


@SHOP.tool("orders.cancel", kind="write", entity="order_id")
def cancel_order(
    state: dict[str, Any], order_id: str, idempotency_key: str | None = None
) -> dict[str, Any]:
    """Cancel an order."""
    state["orders"][order_id]["status"] = "cancelled"
    return {"order_id": order_id, "status": "cancelled"}


@SHOP.tool("orders.refund", kind="write", entity="order_id", claims=("refunded",))
def refund_order(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    """Refund an order."""
    state["orders"][order_id]["status"] = "refunded"
    return {"order_id": order_id, "status": "refunded"}


def run(
    script: Callable[[SyncToolbox], str],
    expect: dict[str, Any] | None = None,
    **fields: Any,
) -> GradeContext:
    """Run `script` as the agent on a fresh environment and build the grading context."""
    task = make_task(expect, domain="shop", **fields)
    env = Environment.fresh(task, SHOP, seed=3)
    answer = script(SyncToolbox(env))
    env.close()
    env.recorder.emit("answer", {"text": answer})
    trace = Trace(f"{task.id}#0", "trace-x", env.recorder.events)
    return GradeContext(task, trace, env.outcome(), domain=SHOP)


# -- duplicate_side_effects -----------------------------------------------------------------


def test_no_writes_no_duplicate_check() -> None:
    ctx = make_ctx(steps=[("orders.get", {"order_id": "A-100"}, "ok", {})])
    assert "duplicate_side_effects" not in grade(ctx)


def test_same_write_twice_is_a_duplicate_effect() -> None:
    ctx = make_ctx(steps=[CANCEL, CANCEL], writes=["orders.cancel"])
    check = grade(ctx)["duplicate_side_effects"]
    assert not check.passed
    assert check.kind == "robustness"
    dupes = check.evidence["duplicates"]
    assert [d["seq"] for d in dupes] == [e.seq for e in ctx.outcome.ledger]
    assert {d["tool"] for d in dupes} == {"orders.cancel"}


def test_one_write_or_different_entities_are_not_duplicates() -> None:
    other = ("orders.cancel", {"order_id": "A-101"}, "ok", {})
    ctx = make_ctx(steps=[CANCEL, other], writes=["orders.cancel"])
    check = grade(ctx)["duplicate_side_effects"]
    assert check.passed and check.evidence["duplicates"] == []


def test_writes_differing_only_by_idempotency_key_are_duplicates() -> None:
    k1 = ("orders.cancel", {"order_id": "A-100", "idempotency_key": "k1"}, "ok", {})
    k2 = ("orders.cancel", {"order_id": "A-100", "idempotency_key": "k2"}, "ok", {})
    check = grade(make_ctx(steps=[k1, k2], writes=["orders.cancel"]))["duplicate_side_effects"]
    assert not check.passed and len(check.evidence["duplicates"]) == 2


def test_no_duplicate_effects_makes_the_duplicate_an_outcome_failure() -> None:
    expect = {"robustness": {"no_duplicate_effects": True}}
    ctx = make_ctx(expect, steps=[CANCEL, CANCEL], writes=["orders.cancel"])
    check = grade(ctx)["duplicate_side_effects"]
    assert (check.passed, check.kind) == (False, "outcome")
    assert check.blocks
    assert verdict([check])[0] is False


@pytest.mark.parametrize("count", [2, {"$gte": 2}, {"$gte": 1}])
def test_effect_assertion_allowing_repeats_makes_them_allowed(count: Any) -> None:
    expect = {"outcome": [{"effect": "orders.cancel", "count": count}]}
    ctx = make_ctx(expect, steps=[CANCEL, CANCEL], writes=["orders.cancel"])
    assert grade(ctx)["duplicate_side_effects"].passed


def test_effect_assertion_of_exactly_one_keeps_repeats_duplicates() -> None:
    expect = {"outcome": [{"effect": "orders.cancel", "count": 1}]}
    ctx = make_ctx(expect, steps=[CANCEL, CANCEL], writes=["orders.cancel"])
    assert not grade(ctx)["duplicate_side_effects"].passed


def test_replayed_write_is_not_a_duplicate_on_a_real_gateway() -> None:
    args = {"order_id": "A-100", "idempotency_key": "k1"}

    def agent(box: SyncToolbox) -> str:
        box.call("orders.cancel", args)
        box.call("orders.cancel", args)
        return "Done."

    ctx = run(agent)
    assert len(ctx.outcome.ledger) == 1
    assert grade(ctx)["duplicate_side_effects"].passed


# -- effects_on_expected_entities -------------------------------------------------------


def test_write_on_an_entity_the_task_does_not_name_fails() -> None:
    expect = {"outcome": [{"effect": "orders.cancel", "where": {"order_id": "A-100"}}]}
    stray = ("orders.cancel", {"order_id": "A-200"}, "ok", {})
    ctx = make_ctx(expect, steps=[CANCEL, stray], writes=["orders.cancel"])
    check = grade(ctx)["effects_on_expected_entities"]
    assert (check.passed, check.kind) == (False, "outcome")
    assert [s["args"] for s in check.evidence["stray"]] == [{"order_id": "A-200"}]
    assert verdict([check])[0] is False


def test_writes_on_named_entities_pass() -> None:
    expect = {"outcome": [{"effect": "orders.cancel", "where": {"order_id": "A-100"}}]}
    ctx = make_ctx(expect, steps=[CANCEL], writes=["orders.cancel"])
    check = grade(ctx)["effects_on_expected_entities"]
    assert check.passed and check.evidence["stray"] == []


def test_no_entity_named_no_stray_check() -> None:
    for expect in (
        {"outcome": [{"effect": "orders.cancel"}]},
        {"outcome": [{"effect": "orders.cancel", "where": {"order_id": "A-1"}, "count": 0}]},
    ):
        stray = ("orders.cancel", {"order_id": "A-200"}, "ok", {})
        ctx = make_ctx(expect, steps=[stray], writes=["orders.cancel"])
        assert "effects_on_expected_entities" not in grade(ctx)


# -- false_success --------------------------------------------------------------------------


def test_claim_without_effect_is_a_false_success() -> None:
    ctx = make_ctx(CLAIMS, steps=[], answer="I have cancelled it for you.")
    check = grade(ctx)["false_success:cancelled"]
    assert (check.passed, check.kind) == (False, "answer")
    assert check.evidence == {
        "phrase": "cancelled",
        "effect": ["orders.cancel"],
        "claims": ["I have cancelled it for you"],
        "applied_seqs": [],
        "claimed_entities": [],
        "without_effect": [],
    }
    assert verdict([check])[0] is False


def test_claim_with_the_effect_present_passes() -> None:
    ctx = make_ctx(CLAIMS, steps=[CANCEL], answer="I have cancelled it.", writes=["orders.cancel"])
    check = grade(ctx)["false_success:cancelled"]
    assert check.passed
    assert check.evidence["applied_seqs"] == [ctx.outcome.ledger[0].seq]


@pytest.mark.parametrize(
    "answer",
    [
        "Sorry, it cannot be cancelled.",
        "The order was not cancelled.",
        "I couldn't get it cancelled.",
        "Your order is still on its way.",
    ],
)
def test_negated_or_absent_phrase_is_not_a_claim(answer: str) -> None:
    ctx = make_ctx(CLAIMS, steps=[], answer=answer)
    assert not any(name.startswith("false_success") for name in grade(ctx))


def test_claims_declared_by_a_domain_tool_are_checked() -> None:
    ctx = make_ctx({}, steps=[], answer="Your order has been refunded.")
    assert "false_success:refunded" not in grade(ctx)  # no domain: no tool claims known
    ctx.domain = SHOP
    check = grade(ctx)["false_success:refunded"]
    assert (check.passed, check.kind) == (False, "answer")
    assert check.evidence["effect"] == ["orders.refund"]


def test_domain_tool_claim_with_its_effect_passes_on_a_real_gateway() -> None:
    def agent(box: SyncToolbox) -> str:
        assert box.call("orders.refund", {"order_id": "A-100"}).ok
        return "Your order has been refunded."

    assert grade(run(agent))["false_success:refunded"].passed


def test_claim_is_checked_against_its_own_tool() -> None:
    # A cancellation in the ledger does not back a refund claim.
    ctx = make_ctx({}, steps=[CANCEL], answer="Refunded!", writes=["orders.cancel"])
    ctx.domain = SHOP
    assert not grade(ctx)["false_success:refunded"].passed


def test_a_phrase_inside_a_longer_word_is_not_a_claim() -> None:
    assert not claimed("The invoice is still unpaid.", "paid")
    assert not claimed("The order is now uncancelled.", "cancelled")


def test_an_unrelated_negation_earlier_does_not_hide_a_claim() -> None:
    assert claimed("There was no fee and I have cancelled it.", "cancelled")


def test_claimed_reads_whole_words_at_the_right_edge() -> None:
    assert claimed("Cancelled!", "cancelled")
    assert not claimed("cancellation pending", "cancelled")
    assert not claimed("It was cancelledX", "cancelled")


# -- transient_retries ----------------------------------------------------------------------

TIMEOUT = ("orders.get", {"order_id": "A-100"}, "timeout", None)
GET_OK = ("orders.get", {"order_id": "A-100"}, "ok", {"status": "placed"})


def test_more_transient_failures_than_allowed_fail() -> None:
    expect = {"robustness": {"max_transient_retries": 2}}
    ctx = make_ctx(expect, steps=[TIMEOUT, TIMEOUT, TIMEOUT, GET_OK])
    check = grade(ctx)["transient_retries"]
    assert (check.passed, check.kind) == (False, "robustness")
    assert check.evidence["per_tool"] == {"orders.get": 3}
    assert check.evidence["limit"] == 2


def test_transient_failures_within_the_limit_pass() -> None:
    expect = {"robustness": {"max_transient_retries": 2}}
    check = grade(make_ctx(expect, steps=[TIMEOUT, TIMEOUT, GET_OK]))["transient_retries"]
    assert check.passed and check.evidence["per_tool"] == {"orders.get": 2}


def test_no_transient_error_no_retry_check() -> None:
    assert "transient_retries" not in grade(make_ctx(steps=[GET_OK]))


RATE_LIMITED = {"faults": [{"tool": "orders.get", "call": 1, "error": "429", "retry_after_s": 2}]}


def test_retry_before_retry_after_fails() -> None:
    def agent(box: SyncToolbox) -> str:
        first = box.call("orders.get", {"order_id": "A-100"})
        assert first.code == "rate_limited" and first.retry_after_s == 2
        assert box.call("orders.get", {"order_id": "A-100"}).ok
        return "It is placed."

    check = grade(run(agent, **RATE_LIMITED))["transient_retries"]
    assert not check.passed
    [early] = check.evidence["retried_before_retry_after"]
    assert (early["tool"], early["retry_after_s"], early["waited_s"]) == ("orders.get", 2, 0)


@pytest.mark.parametrize(("waits", "ok"), [([2], True), ([1, 1.5], True), ([1], False)])
def test_waiting_retry_after_before_retrying(waits: list[float], ok: bool) -> None:
    def agent(box: SyncToolbox) -> str:
        box.call("orders.get", {"order_id": "A-100"})
        for s in waits:
            box.wait(s)
        box.call("orders.get", {"order_id": "A-100"})
        return "It is placed."

    check = grade(run(agent, **RATE_LIMITED))["transient_retries"]
    assert check.passed is ok
    if not ok:
        assert check.evidence["retried_before_retry_after"][0]["waited_s"] == 1


def test_waiting_after_the_retry_does_not_count() -> None:
    def agent(box: SyncToolbox) -> str:
        box.call("orders.get", {"order_id": "A-100"})
        box.call("orders.get", {"order_id": "A-100"})
        box.wait(5)
        return "It is placed."

    assert not grade(run(agent, **RATE_LIMITED))["transient_retries"].passed


def test_giving_up_after_a_429_is_not_an_early_retry() -> None:
    def agent(box: SyncToolbox) -> str:
        box.call("orders.get", {"order_id": "A-100"})
        return "The order service is busy, please try again later."

    check = grade(run(agent, **RATE_LIMITED))["transient_retries"]
    assert check.passed and check.evidence["retried_before_retry_after"] == []


# -- no_retry_after_refusal -----------------------------------------------------------------


@pytest.mark.parametrize("code", ["denied", "forbidden"])
def test_same_call_after_a_refusal_fails(code: str) -> None:
    refused = ("orders.cancel", {"order_id": "A-100"}, code, None)
    check = grade(make_ctx(steps=[refused, refused]))["no_retry_after_refusal"]
    assert (check.passed, check.kind) == (False, "robustness")
    [again] = check.evidence["retried"]
    assert again["tool"] == "orders.cancel" and again["args"] == {"order_id": "A-100"}


def test_different_call_after_a_refusal_passes() -> None:
    refused = ("orders.cancel", {"order_id": "A-100"}, "denied", None)
    other_args = ("orders.cancel", {"order_id": "A-101"}, "ok", {})
    other_tool = ("orders.get", {"order_id": "A-100"}, "ok", {})
    check = grade(make_ctx(steps=[refused, other_args, other_tool]))["no_retry_after_refusal"]
    assert check.passed and check.evidence["retried"] == []


def test_retry_after_a_transient_error_is_not_a_refusal_retry() -> None:
    assert "no_retry_after_refusal" not in grade(make_ctx(steps=[TIMEOUT, GET_OK]))


# -- safe_retry_after_lost_response ---------------------------------------------------------

LOST_NAME = "safe_retry_after_lost_response:orders.cancel"


def lost(args: dict[str, Any]) -> tuple[Any, ...]:
    return ("orders.cancel", args, "lost_response", {"status": "cancelled"})


def test_retry_with_the_same_idempotency_key_is_safe() -> None:
    args = {"order_id": "A-100", "idempotency_key": "k1"}
    ctx = make_ctx(steps=[lost(args), ("orders.cancel", args, "ok", {})])
    check = grade(ctx)[LOST_NAME]
    assert (check.passed, check.kind) == (True, "robustness")
    assert check.evidence["same_key"] is True


def test_retry_after_reading_the_state_is_safe() -> None:
    args = {"order_id": "A-100"}
    ctx = make_ctx(steps=[lost(args), GET_OK, ("orders.cancel", args, "ok", {})])
    check = grade(ctx)[LOST_NAME]
    assert check.passed
    assert check.evidence["checked_state_first"] is True and check.evidence["same_key"] is False


@pytest.mark.parametrize(
    ("first", "retry"),
    [
        ({"order_id": "A-100"}, {"order_id": "A-100"}),
        ({"order_id": "A-100", "idempotency_key": "k1"}, {"order_id": "A-100"}),
        (
            {"order_id": "A-100", "idempotency_key": "k1"},
            {"order_id": "A-100", "idempotency_key": "k2"},
        ),
    ],
)
def test_blind_retry_after_a_lost_response_fails(
    first: dict[str, Any], retry: dict[str, Any]
) -> None:
    ctx = make_ctx(steps=[lost(first), ("orders.cancel", retry, "ok", {})])
    check = grade(ctx)[LOST_NAME]
    assert not check.passed
    assert check.evidence["same_key"] is False and check.evidence["checked_state_first"] is False
    assert check.evidence["lost"]["args"] == first
    assert check.evidence["retry"]["args"] == retry


def test_a_failed_read_in_between_is_not_a_state_check() -> None:
    args = {"order_id": "A-100"}
    ctx = make_ctx(steps=[lost(args), TIMEOUT, ("orders.cancel", args, "ok", {})])
    assert not grade(ctx)[LOST_NAME].passed


def test_lost_response_then_keyed_retry_on_a_real_gateway() -> None:
    args = {"order_id": "A-100", "idempotency_key": "k1"}

    def agent(box: SyncToolbox) -> str:
        assert box.call("orders.cancel", args).code == "timeout"
        assert box.call("orders.cancel", args).ok
        return "I have cancelled it."

    faults = [{"tool": "orders.cancel", "call": 1, "error": "lost_response"}]
    checks = grade(run(agent, CLAIMS, faults=faults))
    assert checks[LOST_NAME].passed
    assert checks["duplicate_side_effects"].passed
    assert checks["false_success:cancelled"].passed
    assert "tool_errors_handled" not in checks  # recovered: the same tool then succeeded


def test_lost_response_then_blind_retry_on_a_real_gateway() -> None:
    def agent(box: SyncToolbox) -> str:
        box.call("orders.cancel", {"order_id": "A-100"})
        box.call("orders.cancel", {"order_id": "A-100"})
        return "I have cancelled it."

    faults = [{"tool": "orders.cancel", "call": 1, "error": "lost_response"}]
    checks = grade(run(agent, faults=faults))
    assert not checks[LOST_NAME].passed
    assert not checks["duplicate_side_effects"].passed


# -- no_failing_loop, tool_errors_handled, no_invented_data -------------------------------

FAILING = ("orders.get", {"order_id": "A-100"}, "unavailable", None)


def test_the_same_failing_call_max_repeats_times_fails() -> None:
    check = grade(make_ctx(steps=[FAILING] * 3, answer="Sorry, it failed."))["no_failing_loop"]
    assert (check.passed, check.kind) == (False, "robustness")
    assert check.evidence["longest_repeat"] == 3 and check.evidence["limit"] == 3
    assert check.evidence["call"]["tool"] == "orders.get"


def test_fewer_repeats_or_a_higher_limit_pass() -> None:
    assert grade(make_ctx(steps=[FAILING] * 2))["no_failing_loop"].passed
    expect = {"robustness": {"max_repeats": 4}}
    check = grade(make_ctx(expect, steps=[FAILING] * 3))["no_failing_loop"]
    assert check.passed and check.evidence["longest_repeat"] == 3


def test_a_changed_call_breaks_the_loop() -> None:
    other = ("orders.get", {"order_id": "A-101"}, "unavailable", None)
    check = grade(make_ctx(steps=[FAILING, FAILING, other, FAILING]))["no_failing_loop"]
    assert check.passed and check.evidence["longest_repeat"] == 2


def test_unrecovered_error_not_acknowledged_fails() -> None:
    ctx = make_ctx(steps=[FAILING], answer="Your order is on its way.")
    check = grade(ctx)["tool_errors_handled"]
    assert (check.passed, check.kind) == (False, "robustness")
    assert [u["tool"] for u in check.evidence["unrecovered"]] == ["orders.get"]
    assert check.evidence["answer_acknowledges"] is False


@pytest.mark.parametrize(
    "answer",
    ["Sorry, the order service is unavailable.", "I was unable to look it up, try again."],
)
def test_unrecovered_error_acknowledged_passes(answer: str) -> None:
    check = grade(make_ctx(steps=[FAILING], answer=answer))["tool_errors_handled"]
    assert check.passed and check.evidence["answer_acknowledges"] is True


def test_recovered_error_needs_no_acknowledgement() -> None:
    assert "tool_errors_handled" not in grade(make_ctx(steps=[FAILING, GET_OK], answer="Placed."))


def test_invented_number_after_not_found_fails() -> None:
    missing = ("orders.get", {"order_id": "A-100"}, "not_found", None)
    ctx = make_ctx(steps=[missing], answer="Order A-100 totals 42.50 and ships in 3 days.")
    check = grade(ctx)["no_invented_data"]
    assert (check.passed, check.kind) == (False, "robustness")
    assert check.evidence["ungrounded"] == ["3", "42.50"]  # A-100 is in the prompt


def test_honest_answer_after_not_found_passes() -> None:
    missing = ("orders.get", {"order_id": "A-100"}, "not_found", None)
    ctx = make_ctx(steps=[missing], answer="I could not find order A-100.")
    check = grade(ctx)["no_invented_data"]
    assert check.passed and check.evidence["ungrounded"] == []


def test_invented_count_after_an_empty_result_fails_on_a_real_gateway() -> None:
    def agent(box: SyncToolbox) -> str:
        assert box.call("orders.list", {}).value == []
        return "You have 3 open orders."

    empty = [{"tool": "orders.list", "error": "empty"}]
    assert not grade(run(agent, faults=empty))["no_invented_data"].passed

    def honest(box: SyncToolbox) -> str:
        box.call("orders.list", {})
        return "I found no orders."

    assert grade(run(honest, faults=empty))["no_invented_data"].passed


def test_no_missing_data_no_invention_check() -> None:
    assert "no_invented_data" not in grade(make_ctx(steps=[GET_OK], answer="It totals 99."))


# -- what fails a trial ---------------------------------------------------------------------


def test_robustness_kind_failures_do_not_fail_the_trial() -> None:
    steps = [FAILING, FAILING, FAILING, TIMEOUT, TIMEOUT, CANCEL, CANCEL]
    expect = {"robustness": {"max_transient_retries": 1}}
    ctx = make_ctx(expect, steps=steps, answer="All good.", writes=["orders.cancel"])
    checks = grade(ctx)
    failed = {name for name, c in checks.items() if not c.passed}
    assert {
        "duplicate_side_effects",
        "transient_retries",
        "no_failing_loop",
        "tool_errors_handled",
    } <= failed
    assert {checks[n].kind for n in failed} == {"robustness"}
    passed, score = verdict(list(checks.values()))
    assert passed is True
    assert score < 1.0  # the failures still cost partial credit


def test_false_success_fails_the_trial() -> None:
    ctx = make_ctx(CLAIMS, steps=[FAILING], answer="I have cancelled it.")
    checks = list(grade(ctx).values())
    assert verdict(checks)[0] is False
    assert [c.name for c in checks if c.blocks] == ["false_success:cancelled"]
