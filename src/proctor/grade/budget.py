"""Budget graders: what a trial cost in money, tokens, time and model calls."""

from __future__ import annotations

from proctor.core.results import NOT_MEASURED, Check
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
    limits: list[tuple[str, float | int | None, float | int | None, str]] = [
        ("max_cost_usd", spec.max_cost_usd, cost, "cost"),
        ("max_tokens", spec.max_tokens, usage.total_tokens, "tokens"),
        ("max_latency_s", spec.max_latency_s, round(ctx.latency_s, 6), "latency"),
        ("max_model_calls", spec.max_model_calls, usage.model_calls, ""),
    ]
    # an imported trace's bad values fail, not pass
    notes = ctx.of_kind("note")
    untrusted = untrusted_measures(notes) if notes else frozenset()
    unmeasured = _unmeasured_calls(ctx)
    checks = []
    for name, limit, actual, measure in limits:
        if limit is None:
            continue
        evidence = {"limit": limit, "actual": NOT_MEASURED if actual is None else actual}
        kept = actual is not None and actual <= limit
        if measure in untrusted:
            evidence["untrusted"], kept = f"data_quality:{measure}", False
        if unmeasured.get(measure):
            evidence["unmeasured_calls"], kept = unmeasured[measure], False
        checks.append(Check(name, "budget", kept, evidence=evidence))
    return checks


def _unmeasured_calls(ctx: GradeContext) -> dict[str, int]:
    """Per figure (cost, tokens) that some model calls measured, how many reported none of
    it: the sum is then only a lower bound, and a limit it seems to keep fails like a figure
    nothing measured. Not where the agent's own total is higher than the calls' sum
    (it counted what they left out)."""
    calls = ctx.of_kind("model_call")
    usage = ctx.usage
    out: dict[str, int] = {}
    for measure, fields, total in (
        ("cost", ("cost_usd",), usage.cost_usd),
        ("tokens", ("input_tokens", "output_tokens"), usage.total_tokens),
    ):
        missing = sum(1 for e in calls if all(e.data.get(f) is None for f in fields))
        if not missing or total is None:
            continue
        traced = sum(e.data.get(f) or 0 for e in calls for f in fields)
        if total <= traced:
            out[measure] = missing
    return out
