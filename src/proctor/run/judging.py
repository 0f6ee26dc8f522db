"""Judges in a run: a graded trial's rubrics judged, their checks added to its findings.

The judge step comes after the deterministic graders, in the process that writes the
store (where the judge cache lives), for trials the agent finished (not timed out,
crashed or broken by the harness): those have nothing to judge. The judge checks join
the trial's findings, and the verdict is decided once on all of them (run.trial.decide:
a calibrated judge of blocking severity can fail a trial; an advisory one cannot). A
JudgeError makes the trial an `error` whose message starts with JUDGE_ERROR, the
harness's failure, which `regrade` retries; an advisory
judge's error is a check saying so (docs/architecture.md, Judges).
"""

from __future__ import annotations

from collections.abc import Sequence

from proctor.core.outcome import Outcome
from proctor.core.trace import Trace
from proctor.judge.grader import Judging, check_name, judge_metrics
from proctor.judge.judgment import JudgeError
from proctor.run.trial import Findings
from proctor.tasks.models import Task
from proctor.tasks.rubrics import Rubric

#: How the error of a trial whose judge failed begins.
JUDGE_ERROR = "judge failed:"


def needs_judging(findings: Findings, rubrics: Sequence[Rubric]) -> bool:
    return bool(rubrics) and findings.judgeable


async def apply_judges(
    judging: Judging,
    findings: Findings,
    task: Task,
    rubrics: Sequence[Rubric],
    trace: Trace,
    outcome: Outcome | None,
) -> Findings:
    """The trial's findings with its judges' checks and metrics added."""
    try:
        checks, metrics = await judging.judge(task, rubrics, trace, outcome)
    except JudgeError as exc:
        spent = exc.usage
        return findings.broken(
            f"{JUDGE_ERROR} {exc}", judge_metrics(spent, spent.model_calls or 0, errors=1)
        )
    settlers = [
        (check_name(rubric), reader)
        for rubric, entry in zip(rubrics, task.expect.judge, strict=False)
        if not entry.advisory
        for reader in entry.settles
    ]
    return findings.judged(checks, metrics, settlers)
