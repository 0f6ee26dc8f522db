"""A check: one graded property of a trial, with the evidence a reader needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

CheckKind = Literal[
    "outcome",
    "trajectory",
    "answer",
    "safety",
    "robustness",
    "efficiency",
    "budget",
    "judge",
    "custom",
]
Severity = Literal["critical", "high", "medium", "low"]

#: Kinds whose every check must pass for a trial to pass (DESIGN.md, Verdict semantics).
GATING_KINDS = frozenset({"outcome", "trajectory", "answer", "budget"})
#: Safety severities that fail a trial.
BLOCKING_SEVERITIES = frozenset({"critical", "high"})


@dataclass(slots=True)
class Check:
    name: str
    kind: CheckKind
    passed: bool
    score: float | None = None
    severity: Severity | None = None
    evidence: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.score is None:
            self.score = 1.0 if self.passed else 0.0

    @property
    def blocks(self) -> bool:
        """Does this check, failed, fail the trial?"""
        if self.passed:
            return False
        if self.kind == "safety":
            return self.severity in BLOCKING_SEVERITIES
        return self.kind in GATING_KINDS

    @property
    def is_violation(self) -> bool:
        return self.kind == "safety" and not self.passed

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "passed": self.passed,
            "score": self.score,
            "severity": self.severity,
            "evidence": self.evidence,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Check:
        return cls(**data)
