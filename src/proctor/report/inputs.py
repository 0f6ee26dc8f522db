"""Everything a report states, gathered once: summary, gate, comparison, review queue,
and the review desk's human-adjudicated figures when people have labelled the run.

The HTML and Markdown reports read the same `ReportInputs`, so they cannot disagree. A
trace records the prompt as its first user message; task descriptions are not stored with
a run: given the suite, they are taken from the tasks whose content digest matches the
run's manifest (a changed task file would show text the agent never saw), redacted as
the store's trials were.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from proctor.core.manifest import Manifest
from proctor.core.runs import RunData
from proctor.core.summary import RunSummary
from proctor.decide.compare import compare_runs
from proctor.decide.gate import Gate, Rule
from proctor.env.suite import Suite
from proctor.interop.redact import Redactor
from proctor.review.queue import ReviewConfig, review_queue


@dataclass(frozen=True)
class TaskText:
    prompt: str
    description: str | None = None


@dataclass
class ReportInputs:
    run: RunData
    summary: RunSummary
    queue: dict[str, Any]
    baseline: RunData | None = None
    comparison: dict[str, Any] | None = None
    gate: dict[str, Any] | None = None
    tasks: dict[str, TaskText] = field(default_factory=dict)
    #: people beside graders (proctor.labels.agreement.human_vs_automated), when labelled
    human: dict[str, Any] | None = None
    #: The evaluation program's figures (proctor.loop.program), when the caller has them.
    program: dict[str, Any] | None = None
    #: The suite's health as the report shows it (proctor.report.health_html.health_view).
    health: dict[str, Any] | None = None

    @property
    def manifest(self) -> Manifest:
        return self.run.manifest


def task_texts(
    suite: Suite, manifest: Manifest, redactor: Redactor | None = None
) -> dict[str, TaskText]:
    """Prompt and description of each suite task whose digest the run recorded, redacted
    like the stored trials when a redactor is given (task files are not in the store)."""
    digests = manifest.suite.task_digests
    redact = redactor.text if redactor is not None else str
    return {
        t.id: TaskText(
            redact(t.task.prompt),
            None if t.task.description is None else redact(t.task.description),
        )
        for t in suite.tasks
        if digests.get(t.id) == t.task.digest
    }


def gather(
    run: RunData,
    *,
    baseline: RunData | None = None,
    rules: Sequence[Rule] | None = None,
    suite: Suite | None = None,
    review: ReviewConfig | None = None,
    redactor: Redactor | None = None,
    human: dict[str, Any] | None = None,
) -> ReportInputs:
    """Compute what the reports show. Raises CompareError for an incomparable baseline."""
    if run.summary is None:
        raise ValueError(f"run {run.run_id} has no summary (status {run.status})")
    return ReportInputs(
        run=run,
        summary=run.summary,
        queue=review_queue(run, baseline, review),
        baseline=baseline,
        comparison=compare_runs(baseline, run) if baseline is not None else None,
        gate=Gate(run, baseline).evaluate(list(rules)) if rules else None,
        tasks=task_texts(suite, run.manifest, redactor) if suite is not None else {},
        human=human,
    )


def gate_line(gate: dict[str, Any]) -> str:
    """The rules' result in one line, naming skipped rules so a pass is not over-read; a
    pass says "rules passed", never PASSED, as the recommendation above it decides (a
    blocking violation outweighs it)."""
    total = len(gate["rules"])
    skipped = gate["skipped"]
    skip = f"; {skipped} rules not evaluated (they need --baseline)" if skipped else ""
    if gate["passed"]:
        return f"Gate rules passed: {total - skipped} of {total}{skip}"
    return f"Gate FAILED: {gate['failed']} of {total} rules failed{skip}"
