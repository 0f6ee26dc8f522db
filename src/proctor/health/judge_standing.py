"""Which judge checks of a suite count, and which are advisory only.

A judge check counts only while its rubric's current version has a calibration record
of that judge meeting the policy (docs/architecture.md, Judges: calibration decides).
Given the judge a run will use (`proctor health --judge REF`), health reports that
judge's standing on each rubric, as the run will see it; without one it reports per
rubric the newest calibration of the current version that meets the policy, with its
judge, or why there is none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from proctor.env.suite import Suite
from proctor.judge.calibration_records import CalibrationPolicy, standing
from proctor.store.calibrations import records
from proctor.store.sqlite import Store


@dataclass(frozen=True)
class JudgeStatus:
    rubric: str
    version: str
    tasks: tuple[str, ...]
    calibrated: bool
    reason: str
    judge: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rubric": self.rubric,
            "version": self.version,
            "tasks": list(self.tasks),
            "calibrated": self.calibrated,
            "status": "counts" if self.calibrated else "advisory only",
            "reason": self.reason,
            "judge": self.judge,
        }


@dataclass(frozen=True)
class NamedJudge:
    """The judge a run will use: its name and the fingerprint its calibrations carry."""

    name: str
    fingerprint: str


def judge_status(
    suite: Suite,
    store: Store | None,
    policy: CalibrationPolicy | None = None,
    judge: NamedJudge | None = None,
) -> list[JudgeStatus]:
    """One row per rubric (id and version) the suite's tasks name: for `judge`, or for
    whichever judge was calibrated."""
    policy = policy or CalibrationPolicy()
    used: dict[tuple[str, str], list[str]] = {}
    for member in suite.tasks:
        for rubric in member.rubrics:
            used.setdefault((rubric.id, rubric.version), []).append(member.id)
    out = []
    for (rubric_id, version), tasks in used.items():
        if judge is not None:
            held = standing(store, rubric_id, version, judge.fingerprint, policy)
            row = (held.calibrated, held.reason, judge.name)
            out.append(JudgeStatus(rubric_id, version, tuple(tasks), *row))
            continue
        found = records(store, rubric_id) if store is not None else []
        current = [r for r in found if r["rubric_version"] == version]
        meeting = [r for r in current if not policy.refusals(r["figures"])]
        if meeting:
            r = meeting[0]
            why = f"calibrated #{r['id']} ({r['date']})"
            out.append(JudgeStatus(rubric_id, version, tuple(tasks), True, why, r["judge"]))
            continue
        if current:
            why = f"refused by calibration #{current[0]['id']}: " + "; ".join(
                policy.refusals(current[0]["figures"])
            )
        elif found:
            why = "uncalibrated: the rubric changed since its calibration"
        else:
            why = "uncalibrated: no calibration of this rubric"
        out.append(JudgeStatus(rubric_id, version, tuple(tasks), False, why))
    return out
