"""From checks to a trial verdict (DESIGN.md, Verdict semantics)."""

from __future__ import annotations

from collections.abc import Sequence

from proctor.grade.check import Check


def verdict(checks: Sequence[Check]) -> tuple[bool, float]:
    """(passed, partial credit). Partial credit never turns a failed check into a pass."""
    passed = not any(c.blocks for c in checks)
    score = sum(c.score or 0.0 for c in checks) / len(checks) if checks else 1.0
    return passed, round(score, 6)
