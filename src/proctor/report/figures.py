"""Headline figures and their wording, shared by the HTML and Markdown reports.

Every number comes from the stored RunSummary, so both reports state what `--json` says.
Task success is the mean over tasks of each task's pass rate (pass@1), with its
task-clustered interval from the summary; pass^k has no interval in the summary, and here
gets a percentile interval from a seeded bootstrap over tasks (tasks, not trials, are the
independent units).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from proctor.core.summary import RunSummary
from proctor.report.fmt import success_interval
from proctor.stats.paired import bootstrap_mean_interval

SEVERITIES = ("critical", "high", "medium", "low")
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class Headline:
    """The figures a reader looks at first, as numbers (format them with report/fmt.py)."""

    k: int
    incomplete: str
    tasks: int
    success: float | None
    success_ci: tuple[float | None, float | None]
    #: The interval in words, with what it is about (`fmt.success_interval`).
    success_ci_text: str
    pooled: float | None
    passed: int
    valid: int
    partial: float | None
    pass_hat_k: float | None
    pass_hat_k_ci: tuple[float, float] | None
    efficiency: float | None
    efficiency_tasks: int
    violations: int
    by_severity: dict[str, int]
    cost_per_passed_trial: float | None
    total_cost: float | None
    currency: dict[str, Any] | None
    #: Did any trial report a cost / tokens? If not, they show as "not measured".
    cost_measured: bool
    tokens_measured: bool
    #: Trials whose cost / tokens are a lower bound (some model calls left them out): the
    #: run's figures are then lower bounds too, and shown as such.
    cost_partial: int
    tokens_partial: int
    p95_tool_calls: float | None
    p95_latency: float | None
    #: The simulated part of a trial's time (tools, faults, waits), p95: labelled as such.
    p95_simulated: float | None
    errors: int
    timeouts: int
    #: Trials a reader could not decide (status needs_review): out of the rates, shown.
    needs_review: int = 0

    def severity_text(self) -> str:
        parts = [f"{n} {s}" for s, n in self.by_severity.items() if n]
        return ", ".join(parts) or "none"


def _task_interval(summary: RunSummary, k: int) -> tuple[float, float] | None:
    values = [row.pass_hat_k[str(k)] for row in summary.per_task if str(k) in row.pass_hat_k]
    return bootstrap_mean_interval(values, seed=BOOTSTRAP_SEED)


def incomplete_note(summary: RunSummary) -> str:
    """Why pass^k stops short of the trials per task ('' when it does not)."""
    pass_k = summary.pass_k
    if pass_k is None or not pass_k.incomplete:
        return ""
    k = summary.trials_per_task
    covered = pass_k.incomplete.get(str(k))
    return (
        f"pass^{k} is not reported: only {covered} of {pass_k.tasks} tasks have {k} valid "
        f"trials, and a figure over fewer tasks is not comparable"
    )


def headline(summary: RunSummary) -> Headline:
    k = summary.headline_k
    violations = summary.safety_violations
    sev = violations.by_severity
    ordered = {s: sev.get(s, 0) for s in SEVERITIES}
    ordered.update({s: n for s, n in sev.items() if s not in ordered})
    low, high = summary.success_ci
    cost = summary.cost
    return Headline(
        k=k,
        incomplete=incomplete_note(summary),
        tasks=sum(1 for row in summary.per_task if row.n),
        success=summary.success_rate,
        success_ci=(low, high),
        success_ci_text=success_interval(summary),
        pooled=summary.pooled_success_rate,
        passed=summary.passed_trials,
        valid=summary.valid_trials,
        partial=summary.partial_rate,
        pass_hat_k=summary.pass_hat_k.get(str(k)),
        pass_hat_k_ci=_task_interval(summary, k),
        efficiency=summary.efficiency.score,
        efficiency_tasks=summary.efficiency.tasks,
        violations=violations.total,
        by_severity=ordered,
        cost_per_passed_trial=cost.per_passed_trial_usd,
        total_cost=cost.total_usd,
        currency=cost.currency,
        # summaries from before these were counted say nothing: take them as measured
        cost_measured=cost.measured_trials != 0,
        tokens_measured=summary.tokens.measured_trials != 0,
        cost_partial=cost.partial_trials,
        tokens_partial=summary.tokens.partial_trials,
        p95_tool_calls=summary.tool_calls.p95,
        p95_latency=summary.latency_s.p95,
        p95_simulated=summary.simulated_s.p95,
        errors=summary.errors,
        timeouts=summary.timeouts,
        needs_review=summary.needs_review,
    )


def review_note(summary: RunSummary) -> str | None:
    """The trials a text reader could not decide, and its undecided rate per check, in
    one sentence; None when there are none. Every report says it the same way."""
    n = summary.needs_review
    rates = summary.undecided.checks
    read = [f"{name} {row.rate:.0%}" for name, row in rates.items() if row.undecided]
    if not n and not read:
        return None
    return (
        f"Needs review: {n} trial{'s' if n != 1 else ''} a text reader could not decide "
        f"(undecided: {', '.join(read) or 'none deciding'}); they are left out of the rates "
        "until a person or a calibrated judge decides them."
    )


def quality_note(summary: RunSummary) -> str | None:
    """What imported data could not be trusted (grade/quality.py), in one sentence; None
    when nothing was flagged. Every report says it the same way."""
    flags = summary.data_quality
    if not flags:
        return None
    listed = ", ".join(f"{code} in {n} trial{'s' if n != 1 else ''}" for code, n in flags.items())
    return (
        f"Data quality: imported values that cannot be trusted ({listed}); those trials "
        "fail, and run figures of a flagged measure are left undefined."
    )


def consistency(summary: RunSummary) -> dict[str, list[str]]:
    """Task ids by how consistent they were: all trials passed, some, none (valid ones)."""
    groups: dict[str, list[str]] = {"always": [], "sometimes": [], "never": []}
    for row in summary.per_task:
        if row.n:
            c, n = row.passed, row.n
            groups["always" if c == n else "never" if c == 0 else "sometimes"].append(row.id)
    return groups
