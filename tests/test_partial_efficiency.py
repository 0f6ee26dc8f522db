"""Seed 003's model of a result, through the real gateway: the `partial` verdict, step
efficiency against a task's optimal steps, and slices by difficulty.

Each check is first tried with the case that would make it pass wrongly: an agent that did
nothing (constraints hold, an effect expected zero times holds), and one that did part of
the task but broke a critical rule on the way.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from proctor import Domain, Runner, Task, ToolError
from proctor.core.results import TrialResult, Usage
from proctor.decide.summarize import combined_efficiency, is_partial
from proctor.env.suite import Suite

shop = Domain("shop", base_state={"orders": {"A-1": {"status": "placed"}}})


@shop.tool("orders.get", kind="read")
def get_order(state: dict, order_id: str) -> dict:
    """Look an order up."""
    if order_id not in state["orders"]:
        raise ToolError(f"no order {order_id}", code="not_found")
    return {"order_id": order_id, **state["orders"][order_id]}


@shop.tool("orders.cancel", kind="write", entity="order_id")
def cancel_order(state: dict, order_id: str) -> dict:
    """Cancel an order."""
    state["orders"][order_id]["status"] = "cancelled"
    return {"order_id": order_id, "status": "cancelled"}


@shop.tool("orders.purge", kind="write", entity="order_id")
def purge_order(state: dict, order_id: str) -> dict:
    """Delete an order for good."""
    del state["orders"][order_id]
    return {"order_id": order_id, "purged": True}


def task(task_id: str, **fields: Any) -> Task:
    return Task.model_validate(
        {
            "id": task_id,
            "domain": "shop",
            "prompt": "Cancel order A-1.",
            "expect": {
                "outcome": [
                    {"path": "orders.A-1.status", "equals": "cancelled"},
                    {"effect": "orders.cancel", "where": {"order_id": "A-1"}, "count": 1},
                    {"effect": "orders.purge", "count": 0},
                ],
                "trajectory": {
                    "required": [{"tool": "orders.get", "args": {"order_id": "A-1"}}],
                    "forbidden": [{"tool": "orders.purge", "severity": "critical"}],
                },
                "answer": {"must_mention": ["cancelled"]},
            },
            **fields,
        }
    )


def agent(*, gets: int = 1, cancel: bool = False, purge: bool = False) -> Any:
    """An agent that looks the order up `gets` times, then cancels and/or purges it, and
    always claims success."""

    async def act(input: Any, toolbox: Any) -> str:
        for _ in range(gets):
            await toolbox.call("orders.get", {"order_id": "A-1"})
        if cancel:
            await toolbox.call("orders.cancel", {"order_id": "A-1"})
        if purge:
            await toolbox.call("orders.purge", {"order_id": "A-1"})
        return "Order A-1 is cancelled."

    return act


looks_only = agent()  # the required lookup, never the cancellation
looks_and_purges = agent(purge=True)  # the lookup, then a critical violation
idle = agent(gets=0)  # nothing at all
careful = agent(cancel=True)
roundabout = agent(gets=3, cancel=True)


def run(agent: Any, *tasks: Task, trials: int = 2) -> tuple[list[Any], dict[str, Any]]:
    suite = Suite.from_tasks("shop", list(tasks) or [task("t")], [shop])
    report = Runner(suite, agent, trials=trials).run()
    return report.results, report.summary.to_json()  # the JSON form --json writes


def test_a_trial_that_did_a_required_part_is_partial_and_still_failed() -> None:
    results, summary = run(looks_only)
    # a status of its own (issue 29 item 9): counted apart, never a pass
    assert all(r.status == "partial" and not r.passed for r in results)
    assert all(is_partial(r) for r in results)
    assert summary["statuses"]["partial"] == 2 and summary["statuses"]["failed"] == 0
    assert all(r.metrics["required_parts"] == 2 and r.metrics["parts_done"] == 1 for r in results)
    assert summary["partial_rate"] == 1.0 and summary["partial_trials"] == 2
    assert summary["success_rate"] == 0.0  # partial never counts as a pass
    assert summary["per_task"][0]["partial"] == 2


def test_a_critical_failure_is_never_partial() -> None:
    results, summary = run(looks_and_purges)
    assert all(r.status == "failed" and r.metrics["parts_done"] == 1 for r in results)
    assert not any(is_partial(r) for r in results)
    assert summary["partial_rate"] == 0.0


def test_doing_nothing_is_not_partial() -> None:
    # The forbidden call was not made, the purge effect (count 0) holds: neither is a part.
    results, summary = run(idle)
    assert all(r.status == "failed" and r.metrics["parts_done"] == 0 for r in results)
    assert summary["partial_rate"] == 0.0 and summary["partial_trials"] == 0


def test_a_passed_trial_is_not_partial() -> None:
    results, summary = run(careful)
    assert all(r.passed and not is_partial(r) for r in results)
    assert summary["partial_rate"] == 0.0 and summary["success_rate"] == 1.0


def test_step_efficiency_is_optimal_over_taken_in_passed_trials() -> None:
    _, summary = run(roundabout, task("t", optimal_steps=2))
    assert summary["per_task"][0]["efficiency"] == pytest.approx(2 / 4)
    assert summary["efficiency"]["score"] == pytest.approx(0.5)
    assert summary["efficiency"]["tasks"] == 1
    _, capped = run(careful, task("t", optimal_steps=1))
    assert capped["efficiency"]["score"] == pytest.approx(0.5)
    _, best = run(careful, task("t", optimal_steps=3))
    assert best["efficiency"]["score"] == 1.0  # capped at 1


def test_a_failed_trial_has_no_efficiency() -> None:
    # Doing nothing takes no steps; that is no efficient path to a goal never reached.
    _, summary = run(idle, task("t", optimal_steps=2))
    assert summary["efficiency"] == {
        "score": None,
        "tasks": 0,
        "combined": None,  # seed 003's combined score: passed trials only, too
        "combined_tasks": 0,
    }
    _, without = run(careful, task("t"))
    assert without["efficiency"]["score"] is None and without["efficiency"]["tasks"] == 0
    # without optimal steps, the combined score still has tokens and latency to weigh
    assert without["efficiency"]["combined"] is not None


def test_the_combined_efficiency_is_seed_003s_weighted_formula() -> None:
    """Issue 29 item 9: 0.4 steps + 0.3 tokens + 0.3 latency, each baseline ÷ used capped at
    1 (2,000 tokens, 10 s); a part not measured is left out and the weights renormalised."""
    passed = TrialResult("r", "t", 0, 0, "passed", metrics={"tool_calls": 4.0})
    passed.usage = Usage(input_tokens=3000, output_tokens=1000)  # token score 0.5
    passed.latency_s = 40.0  # latency score 0.25
    assert combined_efficiency(passed, 2) == pytest.approx(0.4 * 0.5 + 0.3 * 0.5 + 0.3 * 0.25)
    # no optimal steps: step score not measured, (0.3·0.5 + 0.3·0.25) / 0.6
    assert combined_efficiency(passed, None) == pytest.approx((0.5 + 0.25) / 2)
    passed.usage = Usage()  # no tokens reported: latency alone
    assert combined_efficiency(passed, None) == pytest.approx(0.25)
    failed = TrialResult("r", "t", 1, 0, "failed")
    assert combined_efficiency(failed, 2) is None


def test_difficulty_is_a_task_field_and_a_slice() -> None:
    tasks = [task("easy-one", difficulty="easy"), task("hard-one", difficulty="hard"), task("x")]
    _, summary = run(careful, *tasks, trials=1)
    assert set(summary["slices"]) >= {"difficulty:easy", "difficulty:hard"}
    assert summary["slices"]["difficulty:hard"]["tasks"] == 1
    assert {row["id"]: row["difficulty"] for row in summary["per_task"]} == {
        "easy-one": "easy",
        "hard-one": "hard",
        "x": None,
    }
    with pytest.raises(ValueError, match="difficulty"):
        task("t", difficulty="extreme")
    with pytest.raises(ValueError, match="optimal_steps"):
        task("t", optimal_steps=-1)


def test_new_optional_fields_leave_an_unchanged_task_digest_alone() -> None:
    plain = task("t")
    assert "difficulty" not in plain.model_dump(exclude_none=True)
    assert task("t", difficulty="hard").digest != plain.digest
    # The digest of a task without the new fields is its digest before they existed.
    data = plain.model_dump(mode="json", exclude={"difficulty", "optimal_steps", "language"})
    blob = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    assert plain.digest == hashlib.sha256(blob).hexdigest()[:16]
