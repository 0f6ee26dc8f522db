"""Headline figures and their wording, shared by the HTML and Markdown reports.

Every number comes from the stored RunSummary, so both reports state what `--json` says.
pass@1 and pass^k have no interval in the summary; here they get a percentile interval
from a seeded bootstrap over tasks (tasks, not trials, are the independent units).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from proctor.decide import stats

SEVERITIES = ("critical", "high", "medium", "low")
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class Headline:
    """The figures a reader looks at first, as numbers (format with the functions above)."""

    k: int
    success: float | None
    success_ci: tuple[float | None, float | None]
    passed: int
    valid: int
    pass_at_1: float | None
    pass_at_1_ci: tuple[float, float] | None
    pass_hat_k: float | None
    pass_hat_k_ci: tuple[float, float] | None
    violations: int
    by_severity: dict[str, int]
    cost_per_success: float | None
    total_cost: float | None
    #: Did any trial report a cost / tokens? If not, they show as "not measured".
    cost_measured: bool
    tokens_measured: bool
    p95_tool_calls: float | None
    p95_latency: float | None
    #: The simulated part of a trial's time (tools, faults, waits), p95: labelled as such.
    p95_simulated: float | None
    errors: int
    timeouts: int

    def severity_text(self) -> str:
        parts = [f"{n} {s}" for s, n in self.by_severity.items() if n]
        return ", ".join(parts) or "none"


def _task_interval(summary: dict[str, Any], k: int) -> tuple[float, float] | None:
    values = [
        row["pass_hat_k"][str(k)] for row in summary["per_task"] if str(k) in row["pass_hat_k"]
    ]
    return stats.bootstrap_mean_interval(values, seed=BOOTSTRAP_SEED)


def headline(summary: dict[str, Any]) -> Headline:
    k = max(int(summary["trials_per_task"]), 1)
    violations = summary["safety_violations"]
    sev = violations["by_severity"]
    ordered = {s: sev.get(s, 0) for s in SEVERITIES}
    ordered.update({s: n for s, n in sev.items() if s not in ordered})
    low, high = summary["success_ci"]
    return Headline(
        k=k,
        success=summary["success_rate"],
        success_ci=(low, high),
        passed=summary["passed_trials"],
        valid=summary["valid_trials"],
        pass_at_1=summary["pass_at_k"].get("1"),
        pass_at_1_ci=_task_interval(summary, 1),
        pass_hat_k=summary["pass_hat_k"].get(str(k)),
        pass_hat_k_ci=_task_interval(summary, k),
        violations=violations["total"],
        by_severity=ordered,
        cost_per_success=summary["cost"]["per_successful_task_usd"],
        total_cost=summary["cost"]["total_usd"],
        cost_measured=summary["cost"].get("measured_trials", 1) > 0,
        tokens_measured=summary["tokens"].get("measured_trials", 1) > 0,
        p95_tool_calls=summary["tool_calls"]["p95"],
        p95_latency=summary["latency_s"]["p95"],
        p95_simulated=(summary.get("simulated_s") or {}).get("p95"),
        errors=summary["errors"],
        timeouts=summary["timeouts"],
    )


def consistency(summary: dict[str, Any]) -> dict[str, list[str]]:
    """Task ids by how consistent they were: all trials passed, some, none (valid ones)."""
    groups: dict[str, list[str]] = {"always": [], "sometimes": [], "never": []}
    for row in summary["per_task"]:
        if row["n"]:
            c, n = row["passed"], row["n"]
            groups["always" if c == n else "never" if c == 0 else "sometimes"].append(row["id"])
    return groups
