"""Data-quality checks: what an imported trace claimed that could not be trusted.

traces/validation.py neutralises a bad value (a NaN or negative cost, a negative token
count, arguments that are not an object) and leaves a `note` event `{"data_quality": CODE,
"seq", "detail"}`. This grader turns each code into one failing check, so a flagged trial
never passes on values nobody measured: `data_quality:cost`, `:tokens` and `:latency`
are budget checks; `data_quality:arguments` a trajectory check. The budget grader fails
the limit of a flagged measure too (`untrusted_measures`). Traces with no such note get
no check.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from proctor.core.results import Check, CheckKind
from proctor.core.trace import TraceEvent
from proctor.grade.context import GradeContext
from proctor.grade.registry import grader

QUALITY = "data_quality"  # the note key traces/validation.py writes
_KINDS: dict[str, CheckKind] = {
    "cost": "budget",
    "tokens": "budget",
    "latency": "budget",
    "arguments": "trajectory",
}


def quality_flags(notes: Iterable[TraceEvent]) -> dict[str, list[dict[str, Any]]]:
    """The data-quality notes among a trace's `notes` by code."""
    flags: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in notes:
        code = event.data.get(QUALITY)
        if isinstance(code, str):
            flags[code].append(event.data)
    return dict(flags)


def untrusted_measures(notes: Iterable[TraceEvent]) -> set[str]:
    """`cost`, `tokens`, `latency`: the measures a trace's values cannot be trusted for,
    from its `notes`."""
    return set(quality_flags(notes)) & {"cost", "tokens", "latency"}


@grader(QUALITY, applies=lambda task: True)
def grade_quality(ctx: GradeContext) -> list[Check]:
    notes = ctx.of_kind("note")
    if not notes:  # most traces: no note, no flag
        return []
    return [
        Check(
            f"{QUALITY}:{code}",
            _KINDS.get(code, "custom"),
            False,
            evidence={
                "seqs": [n["seq"] for n in flagged if n.get("seq") is not None],
                "details": [n.get("detail") for n in flagged],
            },
        )
        for code, flagged in sorted(quality_flags(notes).items())
    ]
