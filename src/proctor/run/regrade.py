"""Regrading: the graders run again on stored traces, without the agent.

After a grader changes (or a task's expectations are fixed), a run's trials are judged
again from what the store kept: trace, answer, outcome, usage, latency. The result is a
new run (new id; the manifest says `regraded_from`) rather than an update in place, so
the old and new verdicts stay side by side and `proctor compare OLD NEW` shows what the
change did. Regraded trials share their source's trace in the store (no copy).

A status decided before grading stands: a timeout, an infrastructure error, an agent
crash (its `agent_crashed` check is kept). A trial whose graders raised is graded again.
An imported session that carried no final state is regraded without state checks, as it
was graded on import.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proctor.core.results import TrialResult
from proctor.decide.scorecard import ScorecardConfig, summary_with_scorecard
from proctor.decide.summary import DEFAULT_MAX_ERROR_RATE, Tally
from proctor.env.suite import Suite, SuiteTask
from proctor.grade.context import GradeContext
from proctor.grade.registry import grader_versions
from proctor.grade.state import state_recorded, without_state_checks
from proctor.run.judging import JUDGE_ERROR, apply_judges, needs_judging
from proctor.run.runner import task_infos
from proctor.run.trial import CRASH_CHECK, GRADER_ERROR, judge
from proctor.store.sqlite import Store, StoredTrial

if TYPE_CHECKING:
    from proctor.judge.grading import Judging

#: Trials per transaction.
BATCH = 2000


class RegradeError(ValueError):
    """The run cannot be regraded with this suite; `str()` is one line for the user."""


@dataclass
class RegradeReport:
    run_id: str
    source_id: str
    manifest: dict[str, Any]
    summary: dict[str, Any]
    #: Tasks whose content changed since the run: graded with their current expectations.
    changed_tasks: list[str] = field(default_factory=list)
    #: (status before, status after) -> trials, for trials whose status changed.
    flips: Counter[tuple[str, str]] = field(default_factory=Counter)


def regrade(
    store: Store,
    run_ref: str,
    suite: Suite,
    *,
    max_error_rate: float | None = None,
    scorecard: ScorecardConfig | None = None,
    progress: Callable[[TrialResult], None] | None = None,
    judging: Judging | None = None,
) -> RegradeReport:
    """Regrade the stored run `run_ref` (id, prefix or `latest`) into a new run;
    `judging` judges the tasks with rubrics (through the judge cache)."""
    source = store.run(run_ref)
    old = source["manifest"]
    members: dict[str, SuiteTask] = {t.id: t for t in suite.tasks}
    run_tasks = list(old["suite"]["task_digests"])
    missing = [task_id for task_id in run_tasks if task_id not in members]
    if missing:
        listed = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise RegradeError(f"run {source['run_id']} has tasks the suite lacks: {listed}")
    graded = Suite(suite.name, suite.roots, [members[task_id] for task_id in run_tasks])
    changed = [t.id for t in graded.tasks if t.task.digest != old["suite"]["task_digests"][t.id]]
    run_id = uuid.uuid4().hex[:12]
    from proctor.core.version import __version__

    manifest = {
        **old,
        "run_id": run_id,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "regraded_from": source["run_id"],
        "grader_versions": grader_versions(),
        "proctor_version": __version__,
        "suite": {
            **old["suite"],
            "digest": graded.digest,
            "task_digests": {t.id: t.task.digest for t in graded.tasks},
        },
        "judges": judging.manifest() if judging is not None else None,
        "judge_model": ", ".join(judging.panel.models) if judging is not None else None,
    }
    if max_error_rate is None:
        max_error_rate = (source["summary"] or {}).get("max_error_rate", DEFAULT_MAX_ERROR_RATE)
    store.create_run(run_id, manifest)
    tally, flips = Tally(), Counter[tuple[str, str]]()
    loop = asyncio.new_event_loop() if judging is not None else None
    batch: list[tuple[TrialResult, StoredTrial]] = []

    def write_batch() -> None:
        if loop is not None and judging is not None:
            loop.run_until_complete(_judge_all(judging, batch, members))
        for result, stored in batch:
            store.write_regraded(result, stored.source)
            tally.add(result)
            if result.status != stored.result.status:
                flips[(stored.result.status, result.status)] += 1
            if progress is not None:
                progress(result)
        batch.clear()
        store.commit()
        store.begin()

    store.begin()
    try:
        for stored in store.graded_trials(source["run_id"], CRASH_CHECK):
            batch.append((_regraded(stored, run_id, members), stored))
            if len(batch) == BATCH:
                write_batch()
        write_batch()
    finally:
        store.commit()
        if loop is not None:
            loop.close()
    summary = summary_with_scorecard(
        run_id,
        manifest,
        tally.results,
        task_infos(graded),
        max_error_rate=max_error_rate,
        config=scorecard,
    )
    summary["status"] = "completed" if summary["valid"] else "invalid"
    store.finish_run(run_id, summary["status"], summary)
    return RegradeReport(run_id, source["run_id"], manifest, summary, changed, flips)


def _regraded(stored: StoredTrial, run_id: str, members: dict[str, SuiteTask]) -> TrialResult:
    before = stored.result
    result = TrialResult(
        run_id=run_id,
        task_id=before.task_id,
        trial=before.trial,
        seed=before.seed,
        status=before.status,
        usage=before.usage,
        latency_s=before.latency_s,
        trace_id=before.trace_id,
        error=before.error,
    )
    if stored.outcome is None:  # a trial lost with its worker: nothing to grade
        return result
    grader_broke = (before.error or "").startswith((GRADER_ERROR, JUDGE_ERROR))
    decided = stored.crash is not None or (
        before.status in ("timeout", "error") and not grader_broke
    )
    member = members[before.task_id]
    task = member.task
    if not state_recorded(stored.trace):  # an imported session without its final state
        task, _ = without_state_checks(task)
    ctx = GradeContext(
        task, stored.trace, stored.outcome, before.usage, before.latency_s, member.domain
    )
    extra = [stored.crash] if stored.crash is not None else []
    judge(result, ctx, extra, before.status if decided else None, before.error if decided else None)
    return result


async def _judge_all(
    judging: Judging, batch: list[tuple[TrialResult, StoredTrial]], members: dict[str, SuiteTask]
) -> None:
    """Judge a batch of regraded trials at once (the endpoint's scheduler paces them)."""
    jobs = []
    for result, stored in batch:
        member = members[result.task_id]
        if needs_judging(result, member.rubrics):
            jobs.append(
                apply_judges(
                    judging, result, member.task, member.rubrics, stored.trace, stored.outcome
                )
            )
    await asyncio.gather(*jobs)
