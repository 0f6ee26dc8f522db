"""The ToolGateway's policy, approval, tenancy, idempotency and clock, on a real gateway.

Every test drives `Environment.fresh(task, domain, seed)` with the small `shop` domain
below and reads what the gateway recorded: policy decisions (allowed, rule, reason),
results, the ledger and the state.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from proctor import Domain, SyncToolbox, Task, Toolbox, ToolError
from proctor.env import Environment

SHOP = Domain(
    "shop",
    "Orders and account balances, owned by tenants.",
    base_state={
        "orders": {
            "A-1": {"status": "placed", "tenant": "acme"},
            "A-2": {"status": "placed", "tenant": "acme"},
            "G-1": {"status": "placed", "tenant": "globex"},
            "N-1": {"status": "placed"},
        },
        "accounts": {"acc-1": {"balance": 100, "tenant": "acme"}},
    },
)


@SHOP.tool("orders.get", entity="order_id")
def get_order(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    """Read one order."""
    order = state["orders"].get(order_id)
    if order is None:
        raise ToolError(f"no order {order_id!r}", code="not_found")
    return order


@SHOP.tool("orders.cancel", kind="write", entity="order_id")
def cancel_order(
    state: dict[str, Any], order_id: str, idempotency_key: str | None = None
) -> dict[str, Any]:
    """Cancel an order."""
    order = state["orders"][order_id]
    order["status"] = "cancelled"
    order["cancellations"] = order.get("cancellations", 0) + 1
    return {"order_id": order_id, "status": "cancelled"}


@SHOP.tool("orders.refund", kind="write", entity="order_id", approval="require_approval")
def refund_order(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    """Refund an order (needs the user's approval)."""
    state["orders"][order_id]["status"] = "refunded"
    return {"order_id": order_id, "status": "refunded"}


@SHOP.tool("orders.purge", kind="write", entity="order_id", approval="deny")
def purge_order(state: dict[str, Any], order_id: str) -> None:
    """Delete an order for good (denied by default)."""
    del state["orders"][order_id]


@SHOP.tool("accounts.credit", kind="write", entity="account_id")
def credit(
    state: dict[str, Any], account_id: str, amount: int, idempotency_key: str | None = None
) -> dict[str, Any]:
    """Add `amount` to an account's balance."""
    account = state["accounts"][account_id]
    account["balance"] += amount
    return {"account_id": account_id, "balance": account["balance"]}


@SHOP.tool("accounts.debit", kind="write", entity="account_id")
def debit(
    state: dict[str, Any], account_id: str, amount: int, idempotency_key: str | None = None
) -> dict[str, Any]:
    """Take `amount` from an account's balance."""
    account = state["accounts"][account_id]
    account["balance"] -= amount
    return {"account_id": account_id, "balance": account["balance"]}


@SHOP.tool("manager.approve", confirms=True)
def manager_approve(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    """Ask a manager to approve an action on an order (a yes is a confirmation)."""
    if order_id not in state["orders"]:
        raise ToolError(f"no order {order_id!r}", code="not_found")
    return {"approved": True}


@SHOP.tenancy
def owner_of(state: dict[str, Any], tool: Any, args: dict[str, Any]) -> str | None:
    if "order_id" in args:
        return state["orders"].get(args["order_id"], {}).get("tenant")
    if "account_id" in args:
        return state["accounts"].get(args["account_id"], {}).get("tenant")
    return None


YES = [{"when": "confirm", "say": "Yes, go ahead."}, {"when": "*", "say": "No, don't."}]


def make_env(seed: int = 7, **fields: Any) -> Environment:
    data: dict[str, Any] = {
        "id": "policy-task",
        "domain": "shop",
        "prompt": "Handle my orders.",
        "identity": {"user": "u-1", "tenant": "acme"},
        **fields,
    }
    return Environment.fresh(Task.model_validate(data), SHOP, seed)


def decisions(env: Environment) -> list[dict[str, Any]]:
    return [e.data for e in env.recorder.events if e.kind == "policy_decision"]


def events(env: Environment, kind: str) -> list[dict[str, Any]]:
    return [e.data for e in env.recorder.events if e.kind == kind]


def status(env: Environment, order_id: str) -> str:
    return env.gateway.state["orders"][order_id]["status"]


# -- approval: allow / deny / require_approval ----------------------------------------------


def test_tool_default_deny_is_a_policy_denial() -> None:
    env = make_env()
    result = env.gateway.call("orders.purge", {"order_id": "A-1"})
    assert (result.ok, result.code) == (False, "denied")
    assert result.error == "permission denied: denied by policy"
    [decision] = decisions(env)
    assert decision["allowed"] is False
    assert (decision["rule"], decision["reason"]) == ("policy", "denied by policy")
    assert "A-1" in env.gateway.state["orders"]
    assert env.gateway.ledger == []
    assert events(env, "tool_result") == []


def test_task_policy_allows_a_tool_denied_by_default() -> None:
    env = make_env(policy={"orders.purge": "allow"})
    result = env.gateway.call("orders.purge", {"order_id": "A-1"})
    assert result.ok
    [decision] = decisions(env)
    assert decision["allowed"] is True and decision["rule"] == "default"
    assert "A-1" not in env.gateway.state["orders"]
    assert [e.tool for e in env.gateway.ledger] == ["orders.purge"]


def test_task_policy_denies_a_tool_allowed_by_default() -> None:
    allowed = make_env()
    assert allowed.gateway.call("orders.cancel", {"order_id": "A-1"}).ok
    env = make_env(policy={"orders.cancel": "deny"})
    result = env.gateway.call("orders.cancel", {"order_id": "A-1"})
    assert result.code == "denied"
    assert decisions(env)[0]["rule"] == "policy"
    assert status(env, "A-1") == "placed"
    # The task's policy is the task's: another task on the same domain is unaffected.
    assert make_env().gateway.call("orders.cancel", {"order_id": "A-1"}).ok


def test_task_policy_can_require_approval_on_an_allowed_tool() -> None:
    env = make_env(policy={"orders.cancel": "require_approval"})
    result = env.gateway.call("orders.cancel", {"order_id": "A-1"})
    assert result.code == "denied"
    assert decisions(env)[0]["rule"] == "approval"


def test_task_policy_can_waive_a_tools_approval_requirement() -> None:
    env = make_env(policy={"orders.refund": "allow"})
    assert env.gateway.call("orders.refund", {"order_id": "A-1"}).ok
    assert events(env, "confirmation") == []


def test_require_approval_without_confirmation_is_denied() -> None:
    env = make_env(user={"replies": YES})
    result = env.gateway.call("orders.refund", {"order_id": "A-1"})
    assert result.code == "denied"
    [decision] = decisions(env)
    assert decision["allowed"] is False
    assert decision["rule"] == "approval"
    assert "approval required" in decision["reason"]
    assert status(env, "A-1") == "placed"


def test_a_negative_reply_is_no_approval() -> None:
    env = make_env(user={"replies": YES})
    box = SyncToolbox(env)
    assert box.ask_user("What is the weather like?") == "No, don't."
    assert events(env, "confirmation") == []
    assert env.gateway.call("orders.refund", {"order_id": "A-1"}).code == "denied"
    assert decisions(env)[-1]["rule"] == "approval"


def test_affirmative_reply_approves_one_write_only() -> None:
    env = make_env(user={"replies": YES})
    box = SyncToolbox(env)
    assert box.ask_user("Shall I refund order A-1?") == "Yes, go ahead."
    first = box.call("orders.refund", {"order_id": "A-1"})
    assert first.ok and status(env, "A-1") == "refunded"
    assert decisions(env)[-1]["allowed"] is True
    # The approval was consumed: replaying it for a second write is refused.
    second = box.call("orders.refund", {"order_id": "A-2"})
    assert second.code == "denied"
    assert decisions(env)[-1]["rule"] == "approval"
    assert status(env, "A-2") == "placed"
    # A fresh yes approves the next one.
    box.ask_user("Shall I refund order A-2 as well?")
    assert box.call("orders.refund", {"order_id": "A-2"}).ok
    assert [e.entity for e in env.gateway.ledger] == ["A-1", "A-2"]


def test_a_denied_call_does_not_consume_the_approval() -> None:
    env = make_env(user={"replies": YES}, policy={"orders.cancel": "require_approval"})
    box = SyncToolbox(env)
    box.ask_user("Shall I cancel the order?")
    foreign = box.call("orders.cancel", {"order_id": "G-1"})
    assert foreign.code == "denied" and decisions(env)[-1]["rule"] == "tenancy"
    own = box.call("orders.cancel", {"order_id": "A-1"})
    assert own.ok and status(env, "A-1") == "cancelled"


def test_confirming_tool_emits_a_confirmation_that_satisfies_approval() -> None:
    env = make_env()
    assert env.gateway.call("orders.refund", {"order_id": "A-1"}).code == "denied"
    approved = env.gateway.call("manager.approve", {"order_id": "A-1"})
    assert approved.ok
    [confirmation] = events(env, "confirmation")
    assert confirmation == {"call_id": approved.call_id, "via": "manager.approve"}
    kinds = [e.kind for e in env.recorder.events]
    assert kinds.index("confirmation") > kinds.index("tool_result")
    assert env.gateway.call("orders.refund", {"order_id": "A-1"}).ok
    assert status(env, "A-1") == "refunded"
    assert env.gateway.call("orders.refund", {"order_id": "A-2"}).code == "denied"


def test_a_failed_confirming_call_confirms_nothing() -> None:
    env = make_env()
    failed = env.gateway.call("manager.approve", {"order_id": "nope"})
    assert failed.code == "not_found"
    assert events(env, "confirmation") == []
    assert env.gateway.call("orders.refund", {"order_id": "A-1"}).code == "denied"


def test_non_confirming_tool_emits_no_confirmation() -> None:
    env = make_env()
    assert env.gateway.call("orders.get", {"order_id": "A-1"}).ok
    assert events(env, "confirmation") == []


# -- tenancy --------------------------------------------------------------------------------


def test_another_tenants_record_is_denied_naming_the_tenant() -> None:
    env = make_env()
    result = env.gateway.call("orders.cancel", {"order_id": "G-1"})
    assert result.code == "denied"
    [decision] = decisions(env)
    assert decision["allowed"] is False
    assert decision["rule"] == "tenancy"
    assert "globex" in decision["reason"] and "acme" in decision["reason"]
    assert "globex" in (result.error or "")
    assert status(env, "G-1") == "placed"
    assert env.gateway.ledger == []


def test_reads_of_another_tenants_record_are_denied_too() -> None:
    env = make_env()
    result = env.gateway.call("orders.get", {"order_id": "G-1"})
    assert result.code == "denied" and result.value is None
    assert decisions(env)[0]["rule"] == "tenancy"


def test_own_tenant_and_unowned_records_are_allowed() -> None:
    env = make_env()
    assert env.gateway.call("orders.cancel", {"order_id": "A-1"}).ok
    assert env.gateway.call("orders.cancel", {"order_id": "N-1"}).ok
    assert [d["allowed"] for d in decisions(env)] == [True, True]
    assert status(env, "A-1") == status(env, "N-1") == "cancelled"


def test_identity_without_tenant_is_not_tenancy_checked() -> None:
    env = make_env(identity={"user": "ops"})
    assert env.gateway.call("orders.cancel", {"order_id": "G-1"}).ok
    assert decisions(env)[0]["rule"] == "default"
    assert status(env, "G-1") == "cancelled"


# -- idempotency ----------------------------------------------------------------------------


def balance(env: Environment) -> int:
    return env.gateway.state["accounts"]["acc-1"]["balance"]


def test_same_idempotency_key_applies_once_and_replays() -> None:
    env = make_env()
    args = {"account_id": "acc-1", "amount": 10, "idempotency_key": "k-1"}
    first = env.gateway.call("accounts.credit", args)
    second = env.gateway.call("accounts.credit", args)
    assert first.ok and second.ok
    assert second.value == first.value == {"account_id": "acc-1", "balance": 110}
    assert balance(env) == 110
    assert len(env.gateway.ledger) == 1
    assert env.gateway.ledger[0].idempotency_key == "k-1"
    assert len(events(env, "state_change")) == 1
    results = events(env, "tool_result")
    assert [r.get("replayed", False) for r in results] == [False, True]
    assert results[1]["call_id"] == second.call_id


def test_different_idempotency_keys_apply_twice() -> None:
    env = make_env()
    for key in ("k-1", "k-2"):
        assert env.gateway.call(
            "accounts.credit", {"account_id": "acc-1", "amount": 10, "idempotency_key": key}
        ).ok
    assert balance(env) == 120
    assert [e.idempotency_key for e in env.gateway.ledger] == ["k-1", "k-2"]
    assert not any(r.get("replayed") for r in events(env, "tool_result"))


def test_writes_without_a_key_apply_every_time() -> None:
    env = make_env()
    for _ in range(2):
        env.gateway.call("accounts.credit", {"account_id": "acc-1", "amount": 10})
    assert balance(env) == 120
    assert len(env.gateway.ledger) == 2


def test_idempotency_keys_are_scoped_per_tool() -> None:
    env = make_env()
    env.gateway.call(
        "accounts.credit", {"account_id": "acc-1", "amount": 10, "idempotency_key": "k"}
    )
    debit = env.gateway.call(
        "accounts.debit", {"account_id": "acc-1", "amount": 30, "idempotency_key": "k"}
    )
    assert debit.ok and debit.value == {"account_id": "acc-1", "balance": 80}
    assert [e.tool for e in env.gateway.ledger] == ["accounts.credit", "accounts.debit"]


def test_lost_response_then_retry_with_the_same_key_does_not_duplicate() -> None:
    env = make_env(faults=[{"tool": "accounts.credit", "call": 1, "error": "lost_response"}])
    args = {"account_id": "acc-1", "amount": 10, "idempotency_key": "k-1"}
    lost = env.gateway.call("accounts.credit", args)
    assert (lost.ok, lost.code) == (False, "timeout")
    assert balance(env) == 110  # the effect was applied although the agent saw a timeout
    retry = env.gateway.call("accounts.credit", args)
    assert retry.ok and retry.value == {"account_id": "acc-1", "balance": 110}
    assert balance(env) == 110
    assert len(env.gateway.ledger) == 1
    assert events(env, "tool_result")[-1]["replayed"] is True


def test_lost_response_then_blind_retry_duplicates_the_effect() -> None:
    env = make_env(faults=[{"tool": "accounts.credit", "call": 1, "error": "lost_response"}])
    env.gateway.call("accounts.credit", {"account_id": "acc-1", "amount": 10})
    assert env.gateway.call("accounts.credit", {"account_id": "acc-1", "amount": 10}).ok
    assert balance(env) == 120
    assert len(env.gateway.ledger) == 2


# -- the simulated clock ----------------------------------------------------------------


def test_wait_advances_the_clock_and_records_a_note() -> None:
    env = make_env()
    box = SyncToolbox(env)
    before = env.recorder.clock.now
    box.wait(2.5)
    assert env.recorder.clock.now == pytest.approx(before + 2.5)
    note = env.recorder.events[-1]
    assert note.kind == "note" and note.data == {"wait_s": 2.5}
    assert note.t == pytest.approx(before + 2.5)
    call = box.call("orders.get", {"order_id": "A-1"})
    assert call.ok
    assert env.recorder.events[-1].t >= before + 2.5


def test_async_wait_goes_through_the_same_clock() -> None:
    env = make_env()
    asyncio.run(Toolbox(env).wait(4))
    assert env.recorder.clock.now == pytest.approx(4.0)
    assert events(env, "note") == [{"wait_s": 4.0}]


def test_an_approved_call_stopped_by_a_fault_keeps_its_approval() -> None:
    env = make_env(
        user={"replies": YES}, faults=[{"tool": "orders.refund", "call": 1, "error": "unavailable"}]
    )
    box = SyncToolbox(env)
    box.ask_user("Shall I refund order A-1?")
    assert box.call("orders.refund", {"order_id": "A-1"}).code == "unavailable"
    assert box.call("orders.refund", {"order_id": "A-1"}).ok
