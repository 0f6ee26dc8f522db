"""Harness overhead per trial: a scripted agent doing 4 tool calls, full grading, stored.

The agent's own cost is near zero (no model, simulated latency), so the wall time per
trial is the harness's: environment copy, gateway, trace, graders, SQLite writes.

    python benchmarks/overhead.py [--tasks 200] [--trials 5] [--concurrency 1]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

from proctor import Domain, Plan, Runner, ScriptedAgent, Step, Store, Task, ToolError
from proctor.spec.suite import Suite

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
    oid = f"A-{i:05d}"
    orders = {f"A-{j:05d}": {"status": "placed", "total": 10 + j} for j in range(i, i + 20)}
    return Task.model_validate(
        {
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
    )


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    tasks = [make_task(i) for i in range(args.tasks)]
    agent = ScriptedAgent({t.id: make_plan(i) for i, t in enumerate(tasks)}, name="bench")
    suite = Suite.from_tasks("bench", tasks, [shop])
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        runner = Runner(
            suite, agent, trials=args.trials, concurrency=args.concurrency, seed=1, store=store
        )
        profiler = cProfile.Profile() if args.profile else None
        cpu0, wall0 = time.process_time(), time.perf_counter()
        if profiler:
            profiler.enable()
        report = runner.run()
        if profiler:
            profiler.disable()
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        events = store.db.execute("SELECT count(*) FROM events").fetchone()[0]
        store.close()
    n, passed = report.summary["trials"], report.summary["passed_trials"]
    print(f"trials: {n} ({args.tasks} tasks x {args.trials}), passed {passed}")
    print(f"trace events stored: {events} ({events / n:.1f} per trial)")
    print(f"wall: {wall:.3f} s   cpu: {cpu:.3f} s")
    print(f"per trial: {1000 * wall / n:.3f} ms wall, {1000 * cpu / n:.3f} ms cpu")
    print(f"throughput: {n / wall:,.0f} trials/s")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
