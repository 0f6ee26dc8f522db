"""The simulated user's fidelity, judged (`proctor run --user-fidelity JUDGE`).

Guards (proctor.run.userguards) see one reply at a time; what they cannot see (a user
who gives up on its goal with a plausible "never mind", a slip no pattern catches) is
judged on the whole conversation by a judge on the `user-fidelity` rubric (stayed in
persona, disclosed only as allowed, invented nothing, stopped correctly), with the
user's scenario as its prompt. Every trial a model user played that did not pass is
judged, and a sample of the passed ones (seeded from the task and trial only, so a
baseline and a candidate sample the same trials): a simulator error that failed a
trial is what inflates or deflates a pass rate unseen. The judgment is the trial's
`user_fidelity` check, about the user and not the agent (core/results.py:
SIMULATOR_CHECKS). When the judge is calibrated on the rubric (proctor.judge.calibration_records),
a failed verdict makes the trial `sim_error`: out of pass rates, counted, shown, never
rerun; uncalibrated, the check is shown and decides nothing (docs/architecture.md,
Simulated users).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor.core.credentials import scrub
from proctor.core.results import Check, TrialResult, Usage
from proctor.core.trace import USER_SIM_KEY, Trace
from proctor.judge.calibration_records import CalibrationPolicy, Standing, standing
from proctor.judge.grader import judge_metrics
from proctor.judge.judgment import JudgeError, JudgeView
from proctor.judge.panel import JudgePanel, Verdict
from proctor.judge.views import subject_of
from proctor.run.judging import JUDGE_ERROR
from proctor.run.simulator import user_prompt
from proctor.run.trial import Findings
from proctor.tasks.models import Task
from proctor.tasks.rubrics import Rubric, load_rubric

if TYPE_CHECKING:
    from proctor.store.sqlite import Store

#: The shipped rubric (`proctor calibrate` takes this path).
RUBRIC_PATH = Path(__file__).with_name("user-fidelity.yaml")
#: The trial's check (core/results.py: SIMULATOR_CHECKS).
CHECK = "user_fidelity"
#: The share of passed trials judged too (`--fidelity-sample`).
DEFAULT_SAMPLE = 0.1


def fidelity_rubric() -> Rubric:
    return load_rubric(RUBRIC_PATH)


def sampled(task_id: str, trial: int, rate: float) -> bool:
    """Is this passed trial in the sample? From the task and trial only, like user seeds."""
    raw = hashlib.sha256(f"fidelity:{task_id}:{trial}".encode()).digest()
    return int.from_bytes(raw[:8], "big") / 2**64 < rate


def played(trace: Trace) -> bool:
    """Did a model play the user in this trial?"""
    return any(e.noted(USER_SIM_KEY) is not None for e in trace.events)


@dataclass
class Fidelity:
    """A panel ready to judge the run's simulated users, with its standing on the rubric."""

    panel: JudgePanel
    refs: list[str]
    rubric: Rubric
    standing: Standing
    sample: float = DEFAULT_SAMPLE

    @classmethod
    def prepare(
        cls,
        panel: JudgePanel,
        refs: Sequence[str],
        store: Store | None,
        policy: CalibrationPolicy,
        sample: float = DEFAULT_SAMPLE,
    ) -> Fidelity:
        if not 0.0 <= sample <= 1.0:
            raise ValueError("the fidelity sample is a share of passed trials, 0 to 1")
        rubric = fidelity_rubric()
        held = standing(store, rubric.id, rubric.version, panel.fingerprint, policy)
        return cls(panel, list(refs), rubric, held, sample)

    def manifest(self) -> dict[str, Any]:
        """What the run manifest records of its fidelity judge (no credential of its)."""
        described: dict[str, Any] = scrub(
            {
                "refs": self.refs,
                **self.panel.describe(),
                "rubric": self.rubric.id,
                "rubric_version": self.rubric.version,
                "sample": self.sample,
                **self.standing.to_dict(),
            }
        )
        return described

    def selects(self, result: TrialResult, trace: Trace) -> bool:
        """Every trial a model user played that did not pass, and the sampled passed ones;
        never one the harness or the user already broke."""
        if result.status in ("error", "sim_error") or not played(trace):
            return False
        return result.status != "passed" or sampled(result.task_id, result.trial, self.sample)

    async def apply(self, findings: Findings, task: Task, trace: Trace) -> Findings:
        """`findings` with the `user_fidelity` check and the judge's spending added; a
        calibrated judge's failed verdict makes them `sim_error`, its JudgeError `error`."""
        subject = subject_of(self.rubric, trace)
        if not subject:
            return findings
        view = JudgeView(user_prompt(task.user, task.prompt), subject)
        try:
            verdict = await self.panel.score(self.rubric, view)
        except JudgeError as exc:
            spent = _spending(findings.metrics, exc.usage, exc.usage.model_calls or 0, 0)
            if self.standing.calibrated:
                return findings.broken(f"{JUDGE_ERROR} user fidelity: {exc}", spent)
            return findings.judged([self._check(None, str(exc))], spent)
        spent = _spending(findings.metrics, verdict.usage, verdict.calls, verdict.cache_hits)
        judged = findings.judged([self._check(verdict)], spent)
        if not self.standing.calibrated or verdict.passed:
            return judged
        why = verdict.members[0].justification
        return replace(
            judged,
            status="sim_error",
            error=f"simulated user: the fidelity judge scored it {verdict.score:g} "
            f"(below {self.rubric.pass_threshold}): {why}",
        )

    def _check(self, verdict: Verdict | None, error: str = "") -> Check:
        evidence: dict[str, Any] = {
            "rubric": self.rubric.id,
            "rubric_version": self.rubric.version,
            "judge": self.panel.name,
            "threshold": self.rubric.pass_threshold,
            "calibrated": self.standing.calibrated,
            "standing": self.standing.reason,
        }
        if verdict is None:
            evidence["judge_error"] = error
            return Check(CHECK, "custom", False, 0.0, None, evidence)
        low, high = self.rubric.scores[0], self.rubric.scores[-1]
        evidence.update(
            score=verdict.score,
            justification=verdict.members[0].justification,
            members=[m.to_dict() for m in verdict.members],
        )
        score = round((verdict.score - low) / (high - low), 6)
        return Check(CHECK, "custom", verdict.passed, score, None, evidence)


def _spending(
    metrics: Mapping[str, float], usage: Usage, calls: int, hits: int
) -> dict[str, float]:
    """The trial's judge metrics with the fidelity judge's spending added to them."""
    added = judge_metrics(usage, calls, hits)
    return {name: metrics.get(name, 0.0) + value for name, value in added.items()}
