"""Graders: deterministic checks of outcome, trajectory, answer, safety, robustness, budget.

Names load on first use (PEP 562): importing `proctor.grade` for GradeContext does not
import the graders; they load when grading starts (registry.load_builtin_graders).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor.core.lazy import lazy_exports

_EXPORTS = {
    "GradeContext": "proctor.grade.context",
    "ToolCall": "proctor.grade.context",
    "calls_from_trace": "proctor.grade.context",
    "Grader": "proctor.grade.registry",
    "GraderError": "proctor.grade.registry",
    "applicable": "proctor.grade.registry",
    "grade": "proctor.grade.registry",
    "grader": "proctor.grade.registry",
    "grader_versions": "proctor.grade.registry",
    "graders": "proctor.grade.registry",
    "match_trajectory": "proctor.grade.match",
    "tool_metrics": "proctor.grade.tool_use",
}
__all__ = [
    "GradeContext",
    "Grader",
    "GraderError",
    "ToolCall",
    "applicable",
    "calls_from_trace",
    "grade",
    "grader",
    "grader_versions",
    "graders",
    "match_trajectory",
    "tool_metrics",
]
__getattr__ = lazy_exports(globals(), _EXPORTS, {})


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from proctor.grade.context import GradeContext, ToolCall, calls_from_trace
    from proctor.grade.match import match_trajectory
    from proctor.grade.registry import (
        Grader,
        GraderError,
        applicable,
        grade,
        grader,
        grader_versions,
        graders,
    )
    from proctor.grade.tool_use import tool_metrics
