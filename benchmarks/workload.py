"""The benchmark workload: cancel an order, with a scripted agent making 4 tool calls.

Each task has 20 orders in its state; the agent reads two orders, cancels one and reads
it again; grading covers outcome (a path and an effect), trajectory (a required call, an
order, a call budget), answer (a mention, grounding) and budget. The agent's own cost is
near zero (no model; simulated latency), so time per trial is the harness's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from proctor import Domain, Plan, ScriptedAgent, Step, Task, ToolError
from proctor.env.suite import Suite

shop = Domain("bench-shop")


@shop.tool("orders.get", kind="read")
def get_order(state: dict, order_id: str) -> dict:
    """Look up one order."""
    if order_id not in state["orders"]:
        raise ToolError(f"no order {order_id}", "not_found")
    return {"order_id": order_id, **state["orders"][order_id]}


@shop.tool("orders.cancel", kind="write", entity="order_id")
def cancel_order(state: dict, order_id: str, reason: str) -> dict:
    """Cancel an order that has not shipped."""
    state["orders"][order_id]["status"] = "cancelled"
    return {"order_id": order_id, "status": "cancelled"}


def make_task(i: int) -> Task:
    return Task.model_validate(task_data(i))


def task_data(i: int) -> dict[str, Any]:
    """Task `i` as its file holds it."""
    oid = f"A-{i:05d}"
    orders = {f"A-{j:05d}": {"status": "placed", "total": 10 + j} for j in range(i, i + 20)}
    return {
        "id": f"cancel-{i}",
        "domain": "bench-shop",
        "prompt": f"Cancel order {oid}, I changed my mind.",
        "initial_state": {"orders": orders},
        "expect": {
            "outcome": [
                {"path": f"orders.{oid}.status", "equals": "cancelled"},
                {"effect": "orders.cancel", "where": {"order_id": oid}, "count": 1},
            ],
            "trajectory": {
                "required": [{"tool": "orders.get", "args": {"order_id": oid}}],
                "before": [["orders.get", "orders.cancel"]],
                "max_tool_calls": 6,
            },
            "answer": {"must_mention": ["cancelled"], "grounded": True},
            "budget": {"max_cost_usd": 0.1},
        },
    }


def write_workload(tasks: int, folder: Path) -> tuple[Path, str]:
    """The workload as files, for worker processes (`--isolation process`): the suite's
    folder and the agent's reference. Both import this module (on the workers' path)."""
    (folder / "tasks").mkdir(parents=True)
    for i in range(tasks):
        (folder / "tasks" / f"cancel-{i}.json").write_text(json.dumps(task_data(i)))
    (folder / "domain.py").write_text("from workload import shop\n")
    agent = f"from workload import workload\n\nagent = workload({tasks})[1]\n"
    (folder / "agent.py").write_text(agent)
    return folder, f"{folder / 'agent.py'}:agent"


def make_plan(i: int) -> Plan:
    oid = f"A-{i:05d}"
    get = Step("orders.get", {"order_id": oid})
    return Plan(
        steps=(
            get,
            Step("orders.get", {"order_id": f"A-{i + 1:05d}"}),
            Step("orders.cancel", {"order_id": oid, "reason": "changed mind"}),
            get,
        ),
        answer=f"Order {oid} is now cancelled.",
    )


def workload(tasks: int) -> tuple[Suite, ScriptedAgent]:
    """The suite of `tasks` tasks and the agent that plays them."""
    made = [make_task(i) for i in range(tasks)]
    agent = ScriptedAgent({t.id: make_plan(i) for i, t in enumerate(made)}, name="bench")
    return Suite.from_tasks("bench", made, [shop]), agent
