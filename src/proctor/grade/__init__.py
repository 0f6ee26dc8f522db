"""Graders: deterministic checks of outcome, trajectory, answer, safety and budget."""

from proctor.core.results import Check
from proctor.grade import (  # noqa: F401  (registration)
    answer,
    budget,
    outcome,
    robustness,
    safety,
    trajectory,
)
from proctor.grade.context import GradeContext, ToolCall, calls_from_trace
from proctor.grade.match import match_trajectory
from proctor.grade.metrics import tool_metrics
from proctor.grade.registry import Grader, grader, grader_versions, graders


def grade(ctx: GradeContext) -> list[Check]:
    """Run every registered grader on one trial, in registration order."""
    checks: list[Check] = []
    for g in graders():
        checks.extend(g.fn(ctx))
    return checks


__all__ = [
    "GradeContext",
    "Grader",
    "ToolCall",
    "calls_from_trace",
    "grade",
    "grader",
    "grader_versions",
    "graders",
    "match_trajectory",
    "tool_metrics",
]
