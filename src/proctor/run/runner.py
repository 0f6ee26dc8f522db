"""The Runner: tasks × k trials with bounded concurrency, streamed to the store.

Trials run on one asyncio loop; sync agents get a thread each. Each finished trial is
written to the store before the next result is taken, so an interrupted run keeps every
trial that finished. The run's summary is computed from the small TrialResults only.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proctor.run.manifest import build_manifest
from proctor.run.result import TrialResult
from proctor.run.trial import TrialRecord, TrialSpec, run_trial, trial_seed
from proctor.scorecard import ScorecardConfig
from proctor.spec.models import Fault
from proctor.spec.suite import Suite
from proctor.summary import DEFAULT_MAX_ERROR_RATE, TaskInfo, summarize

if TYPE_CHECKING:
    from proctor.store.sqlite import Store

ProgressFn = Callable[[TrialResult], None]


@dataclass
class RunReport:
    run_id: str
    manifest: dict[str, Any]
    summary: dict[str, Any]
    results: list[TrialResult] = field(repr=False)


def task_infos(suite: Suite) -> dict[str, TaskInfo]:
    return {
        t.id: TaskInfo(t.id, list(t.task.tags), list(t.task.suites), t.task.risk, t.task.split)
        for t in suite.tasks
    }


class Runner:
    def __init__(
        self,
        suite: Suite,
        agent: Any,
        *,
        trials: int = 1,
        concurrency: int = 8,
        timeout_s: float | None = 60.0,
        seed: int = 0,
        store: Store | None = None,
        agent_ref: str = "",
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
        faults: Sequence[Fault] = (),
        scorecard: ScorecardConfig | None = None,
    ) -> None:
        """`faults` are injected into every task on top of its own (`--faults`)."""
        if trials < 1:
            raise ValueError("trials must be at least 1")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.suite = suite
        self.agent = agent
        self.trials = trials
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.seed = seed
        self.store = store
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.max_error_rate = max_error_rate
        self.faults = tuple(faults)
        self.scorecard = scorecard
        self.manifest = build_manifest(
            self.run_id,
            suite,
            agent,
            agent_ref=agent_ref,
            trials=trials,
            seed=seed,
            timeout_s=timeout_s,
            concurrency=concurrency,
            filters=filters or {},
            faults=[f.model_dump(exclude_none=True) for f in self.faults],
        )

    def specs(self) -> list[TrialSpec]:
        return [
            TrialSpec(self.run_id, t.task, t.domain, i, trial_seed(self.seed, t.id, i), self.faults)
            for t in self.suite.tasks
            for i in range(self.trials)
        ]

    async def run_async(self, progress: ProgressFn | None = None) -> RunReport:
        if self.store is not None:
            self.store.create_run(self.run_id, self.manifest)
        semaphore = asyncio.Semaphore(self.concurrency)

        async def one(spec: TrialSpec) -> TrialRecord:
            async with semaphore:
                return await run_trial(spec, self.agent, self.timeout_s)

        results: list[TrialResult] = []
        status = "interrupted"
        pending = [asyncio.ensure_future(one(spec)) for spec in self.specs()]
        try:
            for next_done in asyncio.as_completed(pending):
                record = await next_done
                if self.store is not None:
                    self.store.write_trial(
                        record.result, record.trace, record.answer, record.outcome
                    )
                results.append(record.result)
                if progress is not None:
                    progress(record.result)
            status = "completed"
        finally:
            for task in pending:
                task.cancel()
            summary = summarize(
                self.run_id,
                results,
                task_infos(self.suite),
                trials_per_task=self.trials,
                max_error_rate=self.max_error_rate,
                scorecard_config=self.scorecard,
            )
            if status == "completed" and not summary["valid"]:
                status = "invalid"
            summary["status"] = status
            if self.store is not None:
                self.store.finish_run(self.run_id, status, summary)
        return RunReport(self.run_id, self.manifest, summary, results)

    def run(self, progress: ProgressFn | None = None) -> RunReport:
        return asyncio.run(self.run_async(progress))
