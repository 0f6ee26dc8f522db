"""Run one task with any agent through the real trial path: environment, gateway, graders.

Grader tests go through here rather than hand-built traces, so what they grade is what
the ToolGateway records.
"""

from __future__ import annotations

import asyncio
from typing import Any

from proctor.env.domain import Domain, ToolError
from proctor.env.suite import SuiteTask
from proctor.run import TrialRecord, TrialSpec, run_trial
from proctor.tasks.models import Task


def run_task(
    task: Task | dict[str, Any],
    domain: Domain,
    agent: Any,
    *,
    seed: int = 7,
    timeout_s: float = 30,
) -> TrialRecord:
    """Play and grade one trial of `task` (a Task or its fields) on `domain`."""
    if isinstance(task, dict):
        task = Task.model_validate({"id": "t1", "domain": domain.name, **task})
    spec = TrialSpec("test-run", task, domain, 0, seed)
    return asyncio.run(run_trial(spec, agent, timeout_s))


def run_member(
    member: SuiteTask, agent: Any, *, seed: int = 7, timeout_s: float = 30
) -> TrialRecord:
    """One trial of a task loaded from files."""
    return run_task(member.task, member.domain, agent, seed=seed, timeout_s=timeout_s)


def checks_of(record: TrialRecord) -> dict[str, Any]:
    """The trial's checks by name (each name once)."""
    names = [c.name for c in record.result.checks]
    assert len(names) == len(set(names)), names
    return {c.name: c for c in record.result.checks}


def order_desk(name: str, orders: dict[str, dict[str, Any]]) -> Domain:
    """A domain of `orders` with `orders.get` (a `not_found` error for an unknown id) and
    `orders.cancel` (a write); a test adds the tools its case needs."""
    desk = Domain(name, base_state={"orders": orders})

    @desk.tool("orders.get", entity="order_id")
    def get_order(state: dict[str, Any], order_id: str) -> dict[str, Any]:
        """Read an order."""
        if order_id not in state["orders"]:
            raise ToolError(f"no order {order_id}", code="not_found")
        return {"order_id": order_id, **state["orders"][order_id]}

    @desk.tool("orders.cancel", kind="write", entity="order_id")
    def cancel(state: dict[str, Any], order_id: str, reason: str = "") -> dict[str, Any]:
        """Cancel an order."""
        if order_id not in state["orders"]:
            raise ToolError(f"no order {order_id}", code="not_found")
        state["orders"][order_id]["status"] = "cancelled"
        return {"order_id": order_id, "status": "cancelled"}

    return desk
