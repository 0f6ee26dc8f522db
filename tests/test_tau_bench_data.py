"""Statistics and trajectory matching on real data: 200 gpt-4o trajectories from tau-bench.

The data lives in ../shared/data (not in the project); these tests skip without it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from proctor import match_trajectory, stats

DATA = (
    Path(__file__).resolve().parents[2]
    / "shared/data/tau-bench/tau-bench_historical_trajectories_gpt-4o-airline.json"
)
pytestmark = pytest.mark.skipif(not DATA.exists(), reason="shared tau-bench data absent")


@pytest.fixture(scope="module")
def runs() -> list[dict[str, Any]]:
    return json.loads(DATA.read_text())


def per_task_counts(runs: list[dict[str, Any]]) -> list[tuple[int, int]]:
    counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for r in runs:
        counts[r["task_id"]][0] += 1
        counts[r["task_id"]][1] += r["reward"] == 1.0
    return [(n, c) for n, c in counts.values()]


def test_pass_hat_k_reproduces_the_published_figures(runs: list[dict[str, Any]]) -> None:
    counts = per_task_counts(runs)
    assert len(counts) == 50 and all(n == 4 for n, _ in counts)
    published = {1: 0.420, 2: 0.273, 3: 0.220, 4: 0.200}
    for k, value in published.items():
        assert stats.pass_hat_k_tasks(counts, k) == pytest.approx(value, abs=5e-4)
    # pass@1 and pass^1 are both the mean success rate
    assert stats.pass_at_k_tasks(counts, 1) == pytest.approx(0.42)
    with pytest.raises(ValueError):
        stats.pass_hat_k(4, 2, 5)


def test_success_interval_is_clustered_by_task_on_real_runs(runs: list[dict[str, Any]]) -> None:
    counts = per_task_counts(runs)
    rate = stats.task_rate(counts)
    assert rate.value == pytest.approx(0.42)  # 4 trials of every task: pooled = per task
    pooled = stats.wilson_interval(84, 200)
    assert rate.low < 0.42 < rate.high
    # Trials of one task are strongly correlated here: 200 trials are worth far fewer.
    assert rate.effective_n is not None and rate.effective_n < 100
    assert rate.high - rate.low > 1.3 * (pooled[1] - pooled[0])


def calls(traj: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"name": tc["function"]["name"], "args": json.loads(tc["function"]["arguments"])}
        for message in traj
        for tc in message.get("tool_calls") or []
    ]


def test_match_modes_are_consistent_on_real_trajectories(runs: list[dict[str, Any]]) -> None:
    """exact ⇒ in_order ⇒ any_order; unordered ⇔ any_order with equal length."""
    matched_on_success = 0
    for r in runs:
        gold = [{"name": a["name"], "args": a["kwargs"]} for a in r["info"]["task"]["actions"]]
        names = {g["name"] for g in gold}
        actual = [c for c in calls(r["traj"]) if c["name"] in names]
        exact = match_trajectory(actual, gold, order="exact")
        in_order = match_trajectory(actual, gold, order="in_order")
        any_order = match_trajectory(actual, gold, order="any_order")
        unordered = match_trajectory(actual, gold, order="unordered")
        loose = match_trajectory(actual, gold, order="any_order", args="ignore")
        assert (not exact or in_order) and (not in_order or any_order) and (not any_order or loose)
        assert unordered == (any_order and len(actual) == len(gold))
        matched_on_success += bool(r["reward"] == 1.0 and in_order)
    assert matched_on_success > 0
