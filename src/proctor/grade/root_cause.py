"""The root cause of a failed trial: of the checks that failed it, the one first in the trace.

A failed trial usually fails several checks at once: a skipped lookup leaves a required
call missing, the answer ungrounded and a fact unmentioned. The one to read first is the
failure that happened first; the others tend to follow from it (docs/architecture.md,
Verdicts). A check's place in the trace is the earliest event its evidence names (`seq`,
`seqs`: the call made out of order, the forbidden call, the write). A check naming no
event (a call never made, the final state, the answer, the budget) comes after those.
Ties go by kind: the agent's crash and the domain's own checks, then safety (a forbidden
call is the graver reading of a step that was also out of order), trajectory, robustness,
outcome, answer and budget: what the agent did not do explains what it could not answer.

Stored as the per-trial metric `root_cause`, the index of that check in the trial's checks,
computed at grading like the required parts (`proctor.grade.parts`), so summaries built
without evidence still name it.
"""

from __future__ import annotations

from collections.abc import Sequence

from proctor.core.results import Check, evidence_seqs

#: How checks naming the same step, or none, are ordered.
_KIND_ORDER = ("custom", "safety", "trajectory", "robustness", "outcome", "answer", "budget")


def _place(index: int, check: Check) -> tuple[bool, int, int, int]:
    seqs = evidence_seqs(check.evidence)
    kind = _KIND_ORDER.index(check.kind) if check.kind in _KIND_ORDER else len(_KIND_ORDER)
    return (not seqs, seqs[0] if seqs else 0, kind, index)


def root_cause(checks: Sequence[Check]) -> int | None:
    """The index in `checks` of the failure that came first, among the checks that fail the
    trial (`Check.blocks`); None when no check fails it."""
    failing = [(i, c) for i, c in enumerate(checks) if not c.passed and c.blocks]
    if not failing:
        return None
    return min(failing, key=lambda item: _place(*item))[0]


def root_cause_metric(checks: Sequence[Check]) -> dict[str, float]:
    """`{"root_cause": index}` for a trial some check fails, else nothing (stored metric)."""
    index = root_cause(checks)
    return {} if index is None else {"root_cause": float(index)}


def root_cause_name(checks: Sequence[Check], metrics: dict[str, float]) -> str | None:
    """The name of the check the stored `root_cause` metric points at, if any."""
    index = metrics.get("root_cause")
    if index is None or not 0 <= int(index) < len(checks):
        return None
    return checks[int(index)].name
