"""Per-trial tool-use metrics: precision, recall, argument accuracy (docs/architecture.md,
Metrics).

precision = calls to expected tools / all calls, where expected tools are those the task
names as required, allowed, ordered (`before`), in its reference trajectory or as outcome
effects;
recall = required items made (by tool name) / required items;
argument accuracy = required items made with matching arguments / required items made.
"""

from __future__ import annotations

from proctor.core.memo import per_object
from proctor.grade.context import GradeContext
from proctor.grade.trajectory import required_matches
from proctor.tasks.models import AnyOf, EffectAssertion, Task


@per_object
def expected_tools(task: Task) -> frozenset[str]:
    """The tools a task names as required, allowed, ordered, in its reference trajectory
    or as outcome effects."""
    spec = task.expect.trajectory
    relevant: set[str] = set(spec.allowed or []) if spec is not None else set()
    if spec is not None:
        relevant.update(tool for pair in spec.before for tool in pair)
        if spec.reference is not None:
            relevant.update(p.tool for p in spec.reference.patterns)
        for item in spec.required_calls:
            patterns = item.patterns if isinstance(item, AnyOf) else [item]
            relevant.update(p.tool for p in patterns)
    relevant.update(
        a.effect for a in task.expect.outcome if isinstance(a, EffectAssertion) and not a.forbids
    )
    return frozenset(relevant)


def tool_metrics(ctx: GradeContext) -> dict[str, float]:
    calls = ctx.calls
    out: dict[str, float] = {"tool_calls": float(len(calls))}
    spec = ctx.task.expect.trajectory
    if spec is None:
        return out
    relevant = expected_tools(ctx.task)
    made = matched = 0
    for _, by_name, hits in ctx.derived(required_matches):
        if by_name:
            made += 1
            matched += bool(hits)
    if calls and relevant:
        out["tool_precision"] = sum(c.tool in relevant for c in calls) / len(calls)
    if spec.required:
        out["tool_recall"] = made / len(spec.required)
        if made:
            out["arg_accuracy"] = matched / made
    return out
