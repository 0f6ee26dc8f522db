"""A tool call is atomic: a write that raises leaves no change behind, and the trace says so.

The failing case first: a transfer that debits one account and then raises because the
other does not exist would, without a rollback, leave the money gone while the agent was
told the transfer failed and the ledger holds no effect.
"""

from __future__ import annotations

from typing import Any

from proctor import Domain, ToolError
from proctor.core.steps import step
from proctor.grade.context import calls_from_trace
from trial_run import checks_of, run_task

BANK = Domain("bank", base_state={"accounts": {"acc-1": 100, "acc-2": 5}})


@BANK.tool("accounts.transfer", kind="write", entity="src")
def transfer(state: dict[str, Any], src: str, dst: str, amount: int) -> dict[str, Any]:
    """Move money; checks the destination only after debiting (a real bug pattern)."""
    state["accounts"][src] -= amount
    if dst not in state["accounts"]:
        raise ToolError(f"no account {dst}", code="not_found")
    state["accounts"][dst] += amount
    return {"src": src, "dst": dst, "amount": amount}


@BANK.tool("accounts.close", kind="write", entity="account")
def close(state: dict[str, Any], account: str) -> None:
    """Close an account; refuses a non-empty one before touching anything."""
    if state["accounts"][account]:
        raise ToolError("account not empty", code="conflict")
    del state["accounts"][account]


@BANK.tool("accounts.audit", kind="write")
def audit(state: dict[str, Any]) -> None:
    """A write whose own code breaks after a change."""
    state["audited"] = True
    raise RuntimeError("audit log unreachable")


TASK = {
    "prompt": "Move 30 from acc-1 to acc-9.",
    "expect": {"outcome": [{"path": "accounts.acc-1", "equals": 100}]},
}


def transfer_to(dst: str) -> Any:
    def agent(input: Any, toolbox: Any) -> str:
        result = toolbox.call("accounts.transfer", {"src": "acc-1", "dst": dst, "amount": 30})
        return "Done." if result.ok else f"Failed: {result.code}"

    return agent


def test_a_write_that_raises_after_a_change_is_rolled_back() -> None:
    record = run_task(TASK, BANK, transfer_to("acc-9"))
    assert record.answer == "Failed: not_found"
    assert record.outcome is not None
    assert record.outcome.final_state["accounts"] == {"acc-1": 100, "acc-2": 5}
    assert record.outcome.ledger == []
    assert checks_of(record)["state:accounts.acc-1"].passed
    kinds = [e.kind for e in record.trace.events]
    assert kinds[kinds.index("tool_proposal") :] == [
        "tool_proposal",
        "policy_decision",
        "state_rollback",
        "tool_error",
        "answer",
    ]
    rollback = next(record.trace.of_kind("state_rollback"))
    assert rollback.data["tool"] == "accounts.transfer"
    assert rollback.data["changes"] == [
        {"op": "replace", "path": "accounts.acc-1", "before": 100, "after": 70}
    ]
    (call,) = calls_from_trace(record.trace)
    assert call.rolled_back and call.attempted and call.error_code == "not_found"
    shown = step(rollback)
    assert shown.flag == "error" and "rolled back" in shown.text


def test_a_write_that_succeeds_is_kept_and_a_clean_refusal_records_no_rollback() -> None:
    record = run_task(TASK, BANK, transfer_to("acc-2"))
    assert record.outcome is not None
    assert record.outcome.final_state["accounts"] == {"acc-1": 70, "acc-2": 35}
    assert [e.tool for e in record.outcome.ledger] == ["accounts.transfer"]

    def close_full(input: Any, toolbox: Any) -> str:
        return str(toolbox.call("accounts.close", {"account": "acc-1"}).code)

    record = run_task(TASK, BANK, close_full)
    assert record.answer == "conflict"
    assert not list(record.trace.of_kind("state_rollback"))


def test_a_broken_write_is_an_error_trial_and_still_rolled_back() -> None:
    def audit_agent(input: Any, toolbox: Any) -> str:
        toolbox.call("accounts.audit", {})
        return "Audited."

    record = run_task(TASK, BANK, audit_agent)
    assert record.result.status == "error"
    assert record.outcome is not None and "audited" not in record.outcome.final_state
    (rollback,) = record.trace.of_kind("state_rollback")
    assert rollback.data["changes"][0]["path"] == "audited"
