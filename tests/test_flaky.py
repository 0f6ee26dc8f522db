"""`proctor flaky`: two runs with the same seed; a nondeterministic grader is caught."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from proctor.cli import main
from proctor.core.results import Check
from proctor.env.suite import Suite
from proctor.env.toolbox import Toolbox
from proctor.grade.context import GradeContext
from proctor.grade.registry import grader
from proctor.health.flaky import check_differences, flaky_tasks
from proctor.tasks.models import Task
from trial_run import order_desk

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
_unseeded = random.Random()  # what a careless grader does: no seed, no trial RNG


def coin_flip(ctx: GradeContext) -> list[Check]:
    """A planted nondeterministic grader: its verdict is a coin flip."""
    return [Check("coin_flip", "answer", _unseeded.random() < 0.5)]


async def agent(input: Any, toolbox: Toolbox) -> str:
    await toolbox.call("orders.get", {"order_id": "A"})
    return "Order A is placed."


def suite(tasks: int, probe: str | None) -> Suite:
    specs = [
        Task.model_validate(
            {
                "id": f"t{i}",
                "domain": "flakydesk",
                "prompt": "Is order A placed?",
                "expect": {"answer": {"must_mention": ["placed"]}},
                "metadata": {"probe": probe} if probe and i == 0 else {},
            }
        )
        for i in range(tasks)
    ]
    return Suite.from_tasks("flaky", specs, [order_desk("flakydesk", {"A": {"status": "placed"}})])


def test_a_planted_nondeterministic_grader_is_caught_with_its_check() -> None:
    grader("coin_flip_probe", applies=lambda task: task.metadata.get("probe") == "coin")(coin_flip)
    # 20 trials of the probed task: the chance that 20 coin flips agree across two runs
    # by luck is 2**-20.
    report = flaky_tasks(suite(3, "coin"), agent, seed=5, trials=20)
    assert report.flaky_tasks == ["t0"]
    assert report.diffs and all(d.task_id == "t0" for d in report.diffs)
    for d in report.diffs:
        assert set(d.checks) == {"coin_flip"}
        assert d.trace_diff is None and d.cause == "grader"  # same trace, other verdict
        assert sorted(d.checks["coin_flip"]) == ["fail 0", "pass 1"]


def test_a_deterministic_agent_and_graders_give_no_flaky_task() -> None:
    report = flaky_tasks(suite(3, None), agent, seed=5, trials=3)
    assert report.diffs == [] and report.flaky_tasks == []
    assert report.to_dict()["tasks"] == 3


def test_check_differences_compare_repeated_names_one_by_one() -> None:
    first = [Check("x", "answer", True), Check("x", "answer", False)]
    second = [Check("x", "answer", True), Check("x", "answer", True), Check("y", "answer", True)]
    assert check_differences(first, second) == {
        "x#2": ["fail 0", "pass 1"],
        "y": ["absent", "pass 1"],
    }


def test_cli_flaky_exits_0_on_a_deterministic_example() -> None:
    agent_ref = f"{EXAMPLES / 'support' / 'agents.py'}:scripted"
    result = CliRunner().invoke(main, ["flaky", str(EXAMPLES / "support"), "--agent", agent_ref])
    assert result.exit_code == 0, result.output
    assert "0 of 3 tasks flaky" in result.output
