"""Fault injection in the ToolGateway: every kind, every selector, reproducible."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from proctor import Domain, Runner, Task, ToolError
from proctor.core.documents import SpecError
from proctor.env.environment import Environment
from proctor.env.suite import Suite
from proctor.tasks.loader import load_faults
from proctor.tasks.models import Fault

shop = Domain("fault-shop")


@shop.tool("orders.list")
def list_orders(state: dict) -> list[str]:
    """Order ids."""
    return sorted(state["orders"])


@shop.tool("orders.get")
def get_order(state: dict, order_id: str) -> dict:
    """One order."""
    if order_id not in state["orders"]:
        raise ToolError("no such order", "not_found")
    return state["orders"][order_id]


@shop.tool("orders.cancel", kind="write", entity="order_id")
def cancel(state: dict, order_id: str, idempotency_key: str | None = None) -> dict:
    """Cancel."""
    state["orders"][order_id]["status"] = "cancelled"
    return {"order_id": order_id, "status": "cancelled"}


def env_with(*faults: dict[str, Any], seed: int = 1) -> Environment:
    task = Task.model_validate(
        {
            "id": "t",
            "domain": "fault-shop",
            "prompt": "p",
            "initial_state": {"orders": {"A": {"status": "placed"}, "B": {"status": "placed"}}},
            "faults": list(faults),
        }
    )
    return Environment.fresh(task, shop, seed)


def kinds(env: Environment) -> list[str]:
    return [e.kind for e in env.recorder.events]


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ("timeout", "timeout"),
        ("429", "rate_limited"),
        ("400", "bad_request"),
        ("403", "forbidden"),
        ("404", "not_found"),
        ("unavailable", "unavailable"),
    ],
)
def test_blocking_faults_stop_the_call_and_are_recorded(error: str, code: str) -> None:
    env = env_with({"tool": "orders.cancel", "error": error})
    result = env.gateway.call("orders.cancel", {"order_id": "A"})
    assert not result.ok and result.code == code
    assert env.gateway.state["orders"]["A"]["status"] == "placed"
    assert env.gateway.ledger == []
    assert kinds(env) == ["tool_proposal", "policy_decision", "fault", "tool_error"]
    assert env.recorder.events[2].data["fault"] == error


def test_429_carries_retry_after_and_timeout_advances_the_clock() -> None:
    env = env_with({"tool": "orders.get", "error": "429", "retry_after_s": 2.5})
    result = env.gateway.call("orders.get", {"order_id": "A"})
    assert result.retry_after_s == 2.5 and result.to_dict()["retry_after_s"] == 2.5
    env = env_with({"tool": "orders.get", "error": "timeout", "latency_s": 7})
    env.gateway.call("orders.get", {"order_id": "A"})
    assert env.recorder.clock.now == pytest.approx(7)


def test_lost_response_applies_the_write_but_the_agent_sees_a_timeout() -> None:
    env = env_with({"tool": "orders.cancel", "error": "lost_response"})
    result = env.gateway.call("orders.cancel", {"order_id": "A", "idempotency_key": "k1"})
    assert not result.ok and result.code == "timeout"
    assert env.gateway.state["orders"]["A"]["status"] == "cancelled"
    assert [(e.tool, e.idempotency_key) for e in env.gateway.ledger] == [("orders.cancel", "k1")]
    assert kinds(env)[-3:] == ["tool_result", "state_change", "tool_error"]


def test_empty_gives_an_empty_value_of_the_tool_return_type() -> None:
    env = env_with(
        {"tool": "orders.list", "error": "empty"}, {"tool": "orders.get", "error": "empty"}
    )
    listed = env.gateway.call("orders.list", {})
    got = env.gateway.call("orders.get", {"order_id": "A"})
    assert listed.ok and listed.value == []
    assert got.ok and got.value == {}


def test_slow_executes_and_adds_simulated_latency() -> None:
    env = env_with({"tool": "orders.get", "error": "slow", "latency_s": 3})
    result = env.gateway.call("orders.get", {"order_id": "A"})
    assert result.ok and result.value == {"status": "placed"}
    assert env.recorder.clock.now == pytest.approx(3 + shop.tools["orders.get"].latency_s)


def test_selection_by_call_number_calls_and_args() -> None:
    env = env_with({"tool": "orders.get", "error": "timeout", "call": 2})
    codes = [env.gateway.call("orders.get", {"order_id": "A"}).code for _ in range(3)]
    assert codes == [None, "timeout", None]
    env = env_with({"tool": "orders.get", "error": "404", "calls": [1, 3]})
    codes = [env.gateway.call("orders.get", {"order_id": "A"}).code for _ in range(3)]
    assert codes == ["not_found", None, "not_found"]
    env = env_with({"tool": "orders.get", "error": "404", "args": {"order_id": "B"}})
    assert env.gateway.call("orders.get", {"order_id": "A"}).ok
    assert env.gateway.call("orders.get", {"order_id": "B"}).code == "not_found"


def test_probability_is_seeded_per_trial() -> None:
    def pattern(seed: int) -> list[bool]:
        env = env_with({"tool": "orders.get", "error": "timeout", "probability": 0.5}, seed=seed)
        return [env.gateway.call("orders.get", {"order_id": "A"}).ok for _ in range(40)]

    assert pattern(3) == pattern(3)
    assert pattern(3) != pattern(4)
    assert 5 < sum(pattern(3)) < 35


def test_denied_calls_never_reach_a_fault() -> None:
    locked = Domain("locked")

    @locked.tool("x.get", scopes=["x:read"])
    def get(state: dict) -> int:
        """x."""
        return 1

    task = Task.model_validate(
        {
            "id": "t",
            "domain": "locked",
            "prompt": "p",
            "identity": {"scopes": ["y"]},
            "faults": [{"tool": "x.get", "error": "timeout"}],
        }
    )
    env = Environment.fresh(task, locked, 1)
    assert env.gateway.call("x.get", {}).code == "denied"
    assert "fault" not in kinds(env)


def test_run_wide_faults_reach_every_task_and_are_in_the_manifest() -> None:
    task = Task.model_validate(
        {
            "id": "t",
            "domain": "fault-shop",
            "prompt": "p",
            "initial_state": {"orders": {"A": {"status": "placed"}}},
        }
    )

    async def agent(input: Any, toolbox: Any) -> str:
        result = await toolbox.call("orders.get", {"order_id": "A"})
        return result.code or "ok"

    suite = Suite.from_tasks("s", [task], [shop])
    runner = Runner(suite, agent, faults=[Fault(tool="orders.get", error="unavailable")])
    report = runner.run()
    assert report.manifest.run_faults == [{"tool": "orders.get", "error": "unavailable"}]
    assert report.results[0].status == "passed"  # an injected fault is never an `error`


def test_fault_file_errors_name_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "faults.yaml"
    path.write_text(
        "faults:\n  - {tool: orders.get, error: timeout}\n  - {tool: orders.get, error: 503}\n"
    )
    with pytest.raises(SpecError) as info:
        load_faults(path)
    (line,) = info.value.lines()
    assert line.startswith(f"{path}:3: faults[1].error: ")
    path.write_text("- {tool: orders.get, error: timeout, call: 2}\n")
    assert load_faults(path)[0].call == 2
