"""The result of one trial, as stored and summarised."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from proctor.agents.base import Usage
from proctor.grade.check import Check

TrialStatus = Literal["passed", "failed", "timeout", "error"]


@dataclass(slots=True)
class TrialResult:
    run_id: str
    task_id: str
    trial: int
    seed: int
    status: TrialStatus
    checks: list[Check] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    trace_id: str = ""
    score: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def valid(self) -> bool:
        """Error trials (the harness broke) are excluded from success denominators."""
        return self.status != "error"

    @property
    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "task_id": self.task_id,
            "trial": self.trial,
            "seed": self.seed,
            "status": self.status,
            "score": self.score,
            "latency_s": self.latency_s,
            "trace_id": self.trace_id,
            "usage": self.usage.to_dict(),
            "metrics": self.metrics,
            "error": self.error,
            "checks": [c.to_dict() for c in self.checks],
        }
