"""Judges in a run: a graded trial's rubrics judged, its verdict decided again.

The judge step comes after the deterministic graders, in the process that writes the
store (where the judge cache lives), for trials the agent finished (`passed` or `failed`,
not crashed): a timeout or a harness error has nothing to judge. The judge checks join
the trial's checks and the verdict is decided on all of them (a calibrated judge of
blocking severity can fail a trial; an advisory one cannot). A JudgeError makes the trial
an `error` whose message starts with JUDGE_ERROR, the harness's failure, which `regrade`
retries (docs/architecture.md, Judges).
"""

from __future__ import annotations

from collections.abc import Sequence

from proctor.core.outcome import Outcome
from proctor.core.results import TrialResult, verdict
from proctor.core.trace import Trace
from proctor.grade.parts import failed_status
from proctor.judge.base import JudgeError
from proctor.judge.grading import Judging, judge_usage
from proctor.run.trial import CRASH_CHECK, PROTOCOL_CHECK
from proctor.tasks.models import Task
from proctor.tasks.rubrics import Rubric

#: How the error of a trial whose judge failed begins.
JUDGE_ERROR = "judge failed:"


def needs_judging(result: TrialResult, rubrics: Sequence[Rubric]) -> bool:
    return (
        bool(rubrics)
        and result.status in ("passed", "partial", "failed")
        and not any(c.name in (CRASH_CHECK, PROTOCOL_CHECK) for c in result.checks)
    )


async def apply_judges(
    judging: Judging,
    result: TrialResult,
    task: Task,
    rubrics: Sequence[Rubric],
    trace: Trace,
    outcome: Outcome | None,
) -> None:
    """Judge the trial into `result` (checks, metrics, status, score)."""
    try:
        checks, metrics = await judging.judge(task, rubrics, trace, outcome)
    except JudgeError as exc:
        spent = exc.usage
        result.status, result.error = "error", f"{JUDGE_ERROR} {exc}"
        result.metrics = {
            **result.metrics,
            "judge_error": 1.0,
            "judge_calls": float(spent.model_calls or 0),
            **judge_usage(spent),
        }
        return
    result.checks = [*result.checks, *checks]
    result.metrics = {**result.metrics, **metrics}
    passed, result.score = verdict(result.checks)
    result.status = "passed" if passed else failed_status(result.checks, result.metrics)
