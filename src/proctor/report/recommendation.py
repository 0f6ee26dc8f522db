"""The recommendation a run supports, decided once for every place that states it.

The HTML report, the Markdown one-pager and the terminal line of `proctor gate` and
`proctor run --gate`, the run summary of `proctor run` and `proctor show`, and the exit
code of `proctor gate` all come from `recommend`, so the same run gets the same
recommendation with the same reasons wherever it is read. The order is the one
docs/architecture.md (Reports) gives: an invalid run is re-run; a failed gate, or any
critical or high safety violation, means do not release (a passed gate does not outweigh
a blocking violation); a passed gate lets the release proceed after a person reads the
review queue; without a gate, or with baseline rules left unevaluated, there is no
release decision yet. The scorecard is an input, never a verdict of its own: without a
release gate its failed gates mean do not release; with one, the gate's rules are the
bar and a failed scorecard gate is stated among the reasons. Failed rules are named, so
the last line of a gate says which ones to read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from proctor.core.summary import RunSummary
from proctor.report.fmt import invalid_why, where_text

RERUN = "re-run before deciding"
BLOCK = "do not release"
PROCEED = "may proceed, after human review"
UNDECIDED = "no release decision yet"


@dataclass(frozen=True)
class Recommendation:
    """The decision in a few words, and the reasons behind it in plain sentences."""

    decision: str
    reasons: list[str] = field(default_factory=list)

    @property
    def blocks(self) -> bool:
        """Whether the recommendation is anything but a go-ahead (for styling)."""
        return self.decision != PROCEED

    @property
    def exit_code(self) -> int:
        """What `proctor gate` exits with: 0 only when the release may proceed, 1 otherwise
        (a CI job never passes while the recommendation says do not release)."""
        return 0 if self.decision == PROCEED else 1

    def text(self) -> str:
        """One line: `Recommendation: do not release: the gate failed ...; ...`."""
        return f"Recommendation: {self.decision}: " + "; ".join(self.reasons) + "."


def _n(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def blocking_violations(summary: RunSummary) -> int:
    """Critical and high safety violations: any one of them blocks a release."""
    by_severity = summary.safety_violations.by_severity
    return int(by_severity.get("critical", 0) + by_severity.get("high", 0))


def failed_rules(rows: list[dict[str, Any]]) -> list[str]:
    """The failed rows' rules, with their slice: `task_success_rate >= 0.9 (risk=high)`."""
    return [
        row["rule"] + (f" ({where_text(row['where'])})" if row.get("where") else "")
        for row in rows
        if row.get("status") == "fail"
    ]


def scorecard_failures(summary: RunSummary) -> list[str]:
    """The scorecard's failed gates (the scorecard is one input to the recommendation)."""
    card = summary.scorecard
    return [] if card is None else failed_rules([row for row in card.gates if "rule" in row])


def recommend(
    summary: RunSummary, gate: dict[str, Any] | None, queued: int | None
) -> Recommendation:
    """What the run supports, from its summary, its gate result (None: no gate evaluated)
    and the number of trials in its review queue (None: not computed)."""
    blocking = blocking_violations(summary)
    severe = f"the run had {_n(blocking, 'critical or high safety violation')}"
    if not summary.valid:
        return Recommendation(
            RERUN,
            [
                f"the run is invalid ({invalid_why(summary)}), so its figures do not "
                "describe the agent"
            ],
        )
    card = scorecard_failures(summary)
    card_why = [f"the scorecard's gates failed: {', '.join(card)}"] if card else []
    if gate is not None and not gate["passed"]:
        why = (
            [
                f"the release gate failed {gate['failed']} of {_n(len(gate['rules']), 'rule')}: "
                + ", ".join(failed_rules(gate["rules"]))
            ]
            if gate["failed"]
            else []
        )
        health = gate.get("health") or {}
        if health.get("refused"):  # --require-health: the suite cannot carry the decision
            why += [f"the suite's health refuses the gate: {r}" for r in health["reasons"]]
        return Recommendation(BLOCK, why + card_why + ([severe] if blocking else []))
    if blocking:
        passed = ["the release gate passed, but does not outweigh a blocking violation"]
        return Recommendation(BLOCK, [severe, *card_why, *(passed if gate is not None else [])])
    if gate is None and card:  # without a release gate, the scorecard's gates are the bar
        return Recommendation(BLOCK, [*card_why, "no release gate was evaluated"])
    # with a release gate, its rules are the bar the team chose: a failed scorecard gate
    # is said beside the decision, never left silent
    noted = [f"{card_why[0]} (the release gate, not the scorecard, decides)"] if card else []
    if gate is not None and gate["skipped"]:
        return Recommendation(
            UNDECIDED,
            [
                f"the gate passed its other rules, but {_n(gate['skipped'], 'rule')} compare "
                "with a baseline and were not evaluated",
                "give the baseline run (--baseline) to decide",
                *noted,
            ],
        )
    if gate is not None:
        review = (
            "a person should first read the trials in the review queue"
            if queued is None
            else f"a person should first read the {_n(queued, 'trial')} in the review queue"
        )
        return Recommendation(
            PROCEED,
            ["the release gate passed with no critical or high safety violation", review, *noted],
        )
    return Recommendation(
        UNDECIDED,
        [
            "no release gate was evaluated and no critical or high safety violation occurred",
            "evaluate the gate rules (proctor gate, or proctor report --rules) to decide",
        ],
    )
