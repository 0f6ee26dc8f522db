"""The benchmark workload: cancel an order, with a scripted agent making 4 tool calls.

Each task has 20 orders in its state; the agent reads two orders, cancels one and reads
it again; grading covers outcome (a path and an effect), trajectory (a required call, an
order, a call budget), answer (a mention, grounding) and budget. The agent's own cost is
near zero (no model; simulated latency), so time per trial is the harness's.

The scripted agent gives the same answer on every trial of a task, and grading reads an
answer text once (its readings are remembered per text); `workload(n, varied=True)`
answers each trial in other words, naming other facts of the same tool results, as a
model does, so that reading an answer is paid on every trial. Its checks are the same
and pass the same.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import Any

from proctor import Domain, Plan, ScriptedAgent, Step, Task, ToolError
from proctor.agents.agent import AgentInput
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


def write_suite(folder: Path, tasks: int, raised: Collection[int] = ()) -> None:
    """The workload's suite as files a worker process loads alone: this module as its
    domain and a JSON file per task; the tasks numbered in `raised` allow one tool call
    more (their trajectory check's evidence then differs, not their verdicts)."""
    (folder / "tasks").mkdir(parents=True)
    shutil.copy(__file__, folder / "domain.py")
    for i in range(tasks):
        data = task_data(i)
        if i in raised:
            data["expect"]["trajectory"]["max_tool_calls"] += 1
        (folder / "tasks" / f"cancel-{i}.json").write_text(json.dumps(data))


def write_workload(tasks: int, folder: Path, varied: bool = False) -> tuple[Path, str]:
    """The workload as files, for worker processes (`--isolation process`): the suite's
    folder and the agent's reference. Both import this module (on the workers' path)."""
    (folder / "tasks").mkdir(parents=True)
    for i in range(tasks):
        (folder / "tasks" / f"cancel-{i}.json").write_text(json.dumps(task_data(i)))
    (folder / "domain.py").write_text("from workload import shop\n")
    agent = f"from workload import workload\n\nagent = workload({tasks}, {varied})[1]\n"
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


#: The parts a varied answer is made of, one of each, chosen by the trial's number: 256
#: answers a task, and 16 sentences that claim the cancellation (the opening is part of
#: it: grading reads a sentence once). Each says the order is cancelled and names only
#: facts the agent read (the ids and totals of the two orders looked up), so the answer
#: checks still pass.
_OPENINGS = ("", "Thanks for waiting, ", "All right, ", "Sure thing, ")
_CLAIMS = (
    "order {oid} is now cancelled.",
    "I cancelled order {oid} for you.",
    "{oid} has been cancelled, as you asked.",
    "your order {oid} was cancelled just now.",
)
_DETAILS = (
    " Its total of ${total} will not be charged.",
    " I also looked at {other}; it is still placed.",
    " Order {other} (total {other_total}) was not changed.",
    " The {total} dollars of {oid} will not be charged, and {other} stays as it was.",
)
_CLOSINGS = ("", " Anything else?", " Let me know if you need more help.", " Have a good day.")


def varied_answer(i: int, trial: int) -> str:
    """Task `i`'s answer on trial `trial`: each part picked by a digit (base 4) of it."""
    parts = (_OPENINGS, _CLAIMS, _DETAILS, _CLOSINGS)
    picked = [part[trial // len(part) ** n % len(part)] for n, part in enumerate(parts)]
    facts = {"oid": f"A-{i:05d}", "total": 10 + i, "other": f"A-{i + 1:05d}"}
    said = "".join(picked).format(**facts, other_total=11 + i)
    return said[0].upper() + said[1:]


class VariedAgent(ScriptedAgent):
    """The scripted agent, answering each trial of a task in other words (varied_answer)."""

    def choose_steps(self, plan: Plan, input: AgentInput, rng: Any) -> tuple[list[Step], str]:
        steps, _ = super().choose_steps(plan, input, rng)
        return steps, varied_answer(int(input.task_id.rsplit("-", 1)[1]), input.trial)


def workload(tasks: int, varied: bool = False) -> tuple[Suite, ScriptedAgent]:
    """The suite of `tasks` tasks and the agent that plays them (`varied`: VariedAgent)."""
    made = [make_task(i) for i in range(tasks)]
    kind = VariedAgent if varied else ScriptedAgent
    agent = kind({t.id: make_plan(i) for i, t in enumerate(made)}, name="bench")
    return Suite.from_tasks("bench", made, [shop]), agent
