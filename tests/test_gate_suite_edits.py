"""A gate cannot be passed by editing the suite (issue 18, item 6).

Runs go through the real gateway. The candidate agent regresses one task; rewording one
word of that task's prompt, or deleting the task, used to take it out of the pairing so
that `no_regressions` and `non_inferior` passed. Now both fail and name the task, unless
the gates file accepts the change; `proctor gate` prints the pairing's warnings as
`proctor compare` does.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from conftest import proctor
from proctor import Domain, Runner, Store, Task
from proctor.decide.gate import Gate, load_rules
from proctor.env.suite import Suite
from proctor.store.export import RunData, store_run

shop = Domain("shop")
ORDERS = [f"O-{i}" for i in range(8)]
REGRESSING = "cancel-O-7"


@shop.tool("orders.get", kind="read")
def get_order(state: dict, order_id: str) -> dict:
    """Look an order up."""
    return {"order_id": order_id, **state["orders"][order_id]}


@shop.tool("orders.cancel", kind="write", entity="order_id")
def cancel_order(state: dict, order_id: str) -> dict:
    """Cancel an order."""
    state["orders"][order_id]["status"] = "cancelled"
    return {"order_id": order_id, "status": "cancelled"}


def task(order: str, verb: str = "Cancel") -> Task:
    return Task.model_validate(
        {
            "id": f"cancel-{order}",
            "domain": "shop",
            "suites": ["regression"],
            "prompt": f"{verb} order {order}, please.",
            "initial_state": {"orders": {order: {"status": "placed"}}},
            "expect": {
                "outcome": [{"effect": "orders.cancel", "where": {"order_id": order}}],
                "trajectory": {"required": [{"tool": "orders.get"}]},
            },
        }
    )


def _order(input: Any) -> str:
    found = re.search(r"O-\d+", input.prompt)
    assert found is not None
    return found.group(0)


async def good(input: Any, toolbox: Any) -> str:
    order = _order(input)
    await toolbox.call("orders.get", {"order_id": order})
    await toolbox.call("orders.cancel", {"order_id": order})
    return f"Order {order} is cancelled."


async def regresses_o7(input: Any, toolbox: Any) -> str:
    order = _order(input)
    await toolbox.call("orders.get", {"order_id": order})
    if order != "O-7":
        await toolbox.call("orders.cancel", {"order_id": order})
    return f"I looked at order {order}."


def run(store: Store, agent: Any, tasks: list[Task]) -> RunData:
    suite = Suite.from_tasks("shop", tasks, [shop])
    report = Runner(suite, agent, trials=2, store=store, agent_ref="tests:shop").run()
    return store_run(store, report.run_id)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    db = tmp_path_factory.mktemp("edits") / "p.db"
    store = Store(db)
    tasks = [task(o) for o in ORDERS]
    reworded = [*tasks[:-1], task("O-7", verb="Cancel my")]
    out = {
        "db": db,
        "base": run(store, good, tasks),
        "same": run(store, good, tasks),
        "honest": run(store, regresses_o7, tasks),
        "reworded": run(store, regresses_o7, reworded),
        "deleted": run(store, regresses_o7, tasks[:-1]),
    }
    store.close()
    return out


def gates(tmp_path: Path, head: str = "", margin: float = 0.6) -> list[Any]:
    path = tmp_path / "gates.yaml"
    path.write_text(
        f"{head}rules:\n"
        f"  - {{non_inferior: task_success_rate, margin: {margin}}}\n"
        "  - no_regressions: {suite: regression}\n"
    )
    return load_rules(path)


def statuses(run: RunData, base: RunData, rules: list[Any]) -> list[tuple[str, str]]:
    rows = Gate(run, base).evaluate(rules)["rules"][1:]
    return [(row["status"], row["reason"]) for row in rows]


def test_an_honest_regression_fails_no_regressions(runs: dict[str, Any], tmp_path: Path) -> None:
    rules = gates(tmp_path)
    assert [s for s, _ in statuses(runs["same"], runs["base"], rules)] == ["pass", "pass"]
    (_, _), (status, reason) = statuses(runs["honest"], runs["base"], rules)
    assert status == "fail" and reason == f"regressed: {REGRESSING}"


@pytest.mark.parametrize(("edited", "why"), [("reworded", "changed"), ("deleted", "removed")])
def test_editing_the_regressing_task_fails_both_baseline_rules(
    runs: dict[str, Any], tmp_path: Path, edited: str, why: str
) -> None:
    rows = statuses(runs[edited], runs["base"], gates(tmp_path))
    for status, reason in rows:
        assert status == "fail"
        assert f"baseline tasks {why} (accept_{why}): {REGRESSING}" in reason
    result = Gate(runs[edited], runs["base"]).evaluate(gates(tmp_path))
    assert not result["passed"]
    assert any(REGRESSING in w for w in result["warnings"])


@pytest.mark.parametrize(("edited", "key"), [("reworded", "changed"), ("deleted", "removed")])
def test_a_gates_file_may_accept_a_change_by_name(
    runs: dict[str, Any], tmp_path: Path, edited: str, key: str
) -> None:
    head = f"accept_{key}: [{REGRESSING}]\n"
    rows = statuses(runs[edited], runs["base"], gates(tmp_path, head))
    assert rows == [("pass", rows[0][1]), ("pass", "")]
    # Accepting another task's change accepts nothing about this one.
    other = statuses(runs[edited], runs["base"], gates(tmp_path, f"accept_{key}: [x]\n"))
    assert [s for s, _ in other] == ["fail", "fail"]


def test_proctor_gate_prints_the_warnings_compare_prints(runs: dict[str, Any]) -> None:
    db, base, edited = str(runs["db"]), runs["base"].run_id, runs["reworded"].run_id
    path = Path(db).with_name("gates.yaml")
    path.write_text("- no_regressions: true\n")
    gate = proctor("gate", edited, "--rules", str(path), "--baseline", base, "--store", db)
    compare = proctor("compare", base, edited, "--store", db)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    warnings = [line for line in compare.stdout.splitlines() if line.startswith("warning:")]
    assert warnings and all(line in gate.stdout for line in warnings)
    assert f"content_changed): {REGRESSING}" in gate.stdout


def test_accept_lists_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "gates.yaml"
    path.write_text("accept_changed: t1\nrules:\n  - errors == 0\n")
    done = proctor("gate", "x", "--rules", str(path))
    assert done.returncode == 2
    assert done.stderr.strip() == f"{path}:1: accept_changed: a list of task ids"
    path.write_text("accept_everything: true\nrules:\n  - errors == 0\n")
    done = proctor("gate", "x", "--rules", str(path))
    assert done.returncode == 2 and "unknown field" in done.stderr
