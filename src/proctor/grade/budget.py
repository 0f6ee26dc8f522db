"""Budget graders: what a trial cost in money, tokens, time and model calls."""

from __future__ import annotations

from proctor.core.results import FIGURES, NOT_MEASURED, Check
from proctor.grade.context import GradeContext
from proctor.grade.quality import untrusted_measures
from proctor.grade.registry import grader


@grader("budget", applies=lambda task: task.expect.budget is not None)
def grade_budget(ctx: GradeContext) -> list[Check]:
    """A limit on a figure nothing measured fails: the trial cannot show it kept within it
    (an agent that reports no model call has no cost to compare)."""
    spec = ctx.task.expect.budget
    if spec is None:
        return []
    usage = ctx.usage
    cost = None if usage.cost_usd is None else round(usage.cost_usd, 8)
    limits: list[tuple[str, float | int | None, float | int | None, str, float | int | None]] = [
        ("max_cost_usd", spec.max_cost_usd, cost, "cost", usage.cost_usd),
        ("max_tokens", spec.max_tokens, usage.total_tokens, "tokens", usage.total_tokens),
        ("max_latency_s", spec.max_latency_s, round(ctx.latency_s, 6), "latency", None),
        ("max_model_calls", spec.max_model_calls, usage.model_calls, "", None),
    ]
    # an imported trace's bad values fail, not pass
    notes = ctx.of_kind("note")
    untrusted = untrusted_measures(notes) if notes else frozenset()
    checks = []
    for name, limit, actual, measure, total in limits:
        if limit is None:
            continue
        evidence = {"limit": limit, "actual": NOT_MEASURED if actual is None else actual}
        kept = actual is not None and actual <= limit
        if measure in untrusted:
            evidence["untrusted"], kept = f"data_quality:{measure}", False
        unmeasured = _unmeasured_calls(ctx, measure, total)
        if unmeasured:
            evidence["unmeasured_calls"], kept = unmeasured, False
        checks.append(Check(name, "budget", kept, evidence=evidence))
    return checks


_NONE = frozenset({None})


def _unmeasured_calls(ctx: GradeContext, measure: str, total: float | int | None) -> int:
    """How many model calls reported none of `measure` (cost, tokens) where others did:
    the sum is then only a lower bound, and a limit it seems to keep fails like a figure
    nothing measured. 0 where the agent's own `total` is higher than the calls' sum (it
    counted what they left out). Worked out only for a measure the task limits."""
    fields = FIGURES.get(measure)
    if fields is None or total is None:
        return 0
    datas = [e.data for e in ctx.of_kind("model_call")]
    missing = [d for d in datas if _NONE.issuperset(map(d.get, fields))]
    if not missing:
        return 0
    traced = sum(d.get(f) or 0 for d in datas for f in fields)
    return len(missing) if total <= traced else 0
