"""Outcome graders: what the final state and the side-effect ledger say happened."""

from __future__ import annotations

from typing import Any

from proctor.core.jsonvalues import MISSING, get_path
from proctor.core.memo import per_object
from proctor.core.results import Check
from proctor.grade.context import GradeContext
from proctor.grade.registry import grader
from proctor.tasks.models import EffectAssertion, PathAssertion
from proctor.tasks.predicates import args_match, written


def _shown(value: Any) -> Any:
    return "<missing>" if value is MISSING else value


def path_check(assertion: PathAssertion, state: dict[str, Any]) -> Check:
    actual = get_path(state, assertion.path)
    if assertion.checks_equality:
        passed = assertion.equals.test(actual)
        expected: Any = assertion.equals.source
    else:
        passed = (actual is not MISSING) == assertion.exists
        expected = "exists" if assertion.exists else "absent"
    return Check(
        f"state:{assertion.path}",
        "outcome",
        passed,
        evidence={"path": assertion.path, "expected": expected, "actual": _shown(actual)},
    )


@per_object
def _where(assertion: EffectAssertion) -> dict[str, Any] | None:
    """The assertion's argument predicates as the task wrote them, for every trial's
    evidence (shared: not to be changed)."""
    return written(assertion.where)


def effect_check(assertion: EffectAssertion, ctx: GradeContext) -> Check:
    tool, where = assertion.effect, assertion.where
    applied = [e for e in ctx.outcome.effects(tool) if args_match(e.args, where)]
    return Check(
        f"effect:{assertion.effect}",
        "outcome",
        assertion.count.test(len(applied)),
        evidence={
            "effect": assertion.effect,
            "where": _where(assertion),
            "expected_count": assertion.count.source,
            "actual_count": len(applied),
            "seqs": [e.seq for e in applied],
        },
    )


@grader("outcome", applies=lambda task: bool(task.expect.outcome))
def grade_outcome(ctx: GradeContext) -> list[Check]:
    return [
        effect_check(a, ctx)
        if isinstance(a, EffectAssertion)
        else path_check(a, ctx.outcome.final_state)
        for a in ctx.task.expect.outcome
    ]


@grader("domain")
def grade_domain(ctx: GradeContext) -> list[Check]:
    """The domain's own outcome checks (`@domain.check`), on every trial of the domain."""
    checks: list[Check] = []
    if ctx.domain is not None:
        for domain_check in ctx.domain.checks:
            checks.extend(domain_check(ctx.task, ctx.trace, ctx.outcome))
    return checks
