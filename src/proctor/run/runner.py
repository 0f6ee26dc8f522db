"""The Runner: tasks × k trials through an executor, streamed to the store.

An executor (local by default; process or Ray) runs the trials; their records come back
here, where each is written to the store and reduced to what the summary reads (a
Tally). Nothing else of a trial stays in memory, so a run's size is bounded by the disk,
not by RAM. Trials are written in groups, one transaction every `COMMIT_EVERY_S` or
`COMMIT_MAX` trials: a crash loses at most the trials in flight and those finished since
the last commit, and `resume` redoes exactly those, with the same seeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proctor.core.manifest import Manifest
from proctor.core.results import Currency, TaskInfo, TrialResult
from proctor.core.summary import RunSummary
from proctor.decide.scorecard import ScorecardConfig, summary_with_scorecard
from proctor.decide.summarize import DEFAULT_MAX_ERROR_RATE, Tally
from proctor.env.suite import Suite
from proctor.run.executor import Executor, LocalExecutor, RunContext, drive_lanes
from proctor.run.fidelity import Fidelity
from proctor.run.judging import JUDGE_ERROR, apply_judges, needs_judging
from proctor.run.manifest_build import build_manifest
from proctor.run.resume import resumed_manifest
from proctor.run.simulator import UserPlayer
from proctor.run.trial import TrialRecord, TrialSpec, trial_seed
from proctor.run.worker_source import ExecutorError, TrialSource
from proctor.store.file_health import StoreError
from proctor.tasks.models import Fault

if TYPE_CHECKING:
    from proctor.judge.grader import Judging
    from proctor.store.sqlite import EncodedTrial, Store

ProgressFn = Callable[[TrialResult], None]

#: Group commit: the longest a finished trial waits to be durable, and the largest group.
COMMIT_EVERY_S = 0.1
COMMIT_MAX = 256
#: The cyclic collector's young-generation threshold while a run lasts (CPython's is 700).
#: A trial's world, trace and records, thousands of objects, live a while (its lane hands
#: trials ahead), and a young collection every 700 of them walked the trials in flight,
#: and again in the middle generation: 5% of the overhead benchmark's CPU, measured,
#: almost none of it at this threshold; a cycle among them goes at the next one.
YOUNG_COLLECTION_EVERY = 10_000


@dataclass(repr=False)
class RunReport:
    run_id: str
    manifest: Manifest
    summary: RunSummary
    kept: list[TrialResult] | None = field(default=None, repr=False)
    store: Store | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        """Short: `asyncio.run` writes the repr of its task, whose result this is, twice as
        it ends (signal.getsignal naming the handler it holds), and the summary's repr,
        with every task's entry, cost 5 µs a trial."""
        summary = self.summary
        return f"RunReport({self.run_id!r}, {summary.status}, {summary.trials} trials)"

    @property
    def results(self) -> list[TrialResult]:
        """Every trial's full result. A run with a store streamed them there rather than
        holding them, so they are read back from it (which must still be open)."""
        if self.kept is None:
            assert self.store is not None, "a run without a store keeps its results"
            self.kept = list(self.store.trial_results(self.run_id))
        return self.kept


def task_infos(suite: Suite) -> dict[str, TaskInfo]:
    return {
        t.id: TaskInfo(
            t.id,
            list(t.task.tags),
            list(t.task.suites),
            t.task.risk,
            t.task.split,
            t.task.difficulty,
            t.task.optimal_steps,
        )
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
        currency: Currency | None = None,
        executor: Executor | None = None,
        resume: bool = False,
        judging: Judging | None = None,
        user: UserPlayer | None = None,
        fidelity: Fidelity | None = None,
    ) -> None:
        """`faults` are injected into every task on top of its own (`--faults`).
        `currency`: the price table's reporting currency, recorded in the manifest for
        gates, scorecards and reports (costs stay recorded in USD). `judging` judges the
        trials of tasks with rubrics (proctor.run.judging). `user`: the model that plays
        the users of tasks with a scenario (proctor.run.simulator), in the manifest;
        `fidelity` judges how faithfully it played them (proctor.run.fidelity).

        `resume`: continue the stored run `run_id` (a unique prefix will do): its stored
        trials are kept and the others run. Raises ResumeError (one line) when that run is
        finished or differs from this one in suite, agent reference, seed, trials,
        faults or user model; ExecutorError when the executor cannot run this suite and
        agent (or a model user).
        """
        if trials < 1:
            raise ValueError("trials must be at least 1")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if resume and (store is None or run_id is None):
            raise ValueError("resuming needs the store and the run id")
        self.suite = suite
        self.agent = agent
        self.trials = trials
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.seed = seed
        self.store = store
        self.resume = resume
        self.max_error_rate = max_error_rate
        self.faults = tuple(faults)
        self.scorecard = scorecard
        self.executor = executor or LocalExecutor()
        stored = store.run(run_id) if resume and store is not None and run_id else None
        self.run_id = stored["run_id"] if stored else run_id or uuid.uuid4().hex[:12]
        self.manifest = build_manifest(
            self.run_id,
            suite,
            agent,
            agent_ref=agent_ref,
            trials=trials,
            seed=seed,
            timeout_s=timeout_s,
            concurrency=concurrency,
            executor=self.executor.name,
            filters=filters or {},
            faults=[f.model_dump(exclude_none=True) for f in self.faults],
        )
        if user is not None:  # before a resumption compares it with the stored run's
            if self.executor.needs_source:  # workers rebuild trials from references only
                raise ExecutorError(
                    f"a model user runs in this process: not with {self.executor.name}"
                )
            self.manifest = self.manifest.model_copy(update={"user_model": user.identity()})
        # Copies made before any agent runs: an agent that reaches a domain's module
        # (sys.modules) and changes its Domain cannot change another trial's world.
        self._domains = {id(t.domain): t.domain for t in suite.tasks}
        self._domains = {key: domain.snapshot() for key, domain in self._domains.items()}
        if currency is not None:
            self.manifest = self.manifest.model_copy(update={"currency": currency.to_dict()})
        self.done: set[tuple[str, int]] = set()
        #: The run is in the store (created, or reopened to resume): `--resume` finds it.
        self.recorded = False
        if stored is not None and store is not None:
            self.manifest = resumed_manifest(stored, self.manifest)
            self.done = store.trial_keys(self.run_id)
        self.judging = judging
        self.user = user
        self.fidelity = fidelity if user is not None else None
        if self.fidelity is not None:
            fidelity_identity = {"user_fidelity": self.fidelity.manifest()}
            self.manifest = self.manifest.model_copy(update=fidelity_identity)
        if judging is not None:  # a resumed run records the judges of its new trials too
            judges = {"judges": judging.manifest(), "judge_model": ", ".join(judging.panel.models)}
            self.manifest = self.manifest.model_copy(update=judges)
        self.source = (
            self.executor.worker_source(
                TrialSource.of(suite, agent_ref, self.run_id, timeout_s, self.faults)
            )
            if self.executor.needs_source
            else None
        )

    @property
    def remaining(self) -> int:
        """Trials this run will execute (all of them, less those a resumed run has)."""
        return len(self.suite.tasks) * self.trials - len(self.done)

    def specs(self) -> Iterator[TrialSpec]:
        """Every trial not stored yet, created as the executor asks for it."""
        for t in self.suite.tasks:
            for i in range(self.trials):
                if (t.id, i) not in self.done:
                    seed = trial_seed(self.seed, t.id, i)
                    domain = self._domains[id(t.domain)]
                    yield TrialSpec(self.run_id, t.task, domain, i, seed, self.faults, self.user)

    async def run_async(self, progress: ProgressFn | None = None) -> RunReport:
        """Run the trials not stored yet. A run that cannot finish (the agent's process
        exits, the store fails, Ctrl-C) is stored as `interrupted` when the store still
        takes writes, and the cause is raised; what was committed stays for `--resume`."""
        with _collector_sees_the_run_only(), rarer_collections(young=YOUNG_COLLECTION_EVERY):
            return await self._run(progress)

    async def _run(self, progress: ProgressFn | None) -> RunReport:
        store, tally = self.store, Tally()
        started = time.perf_counter()
        kept: list[TrialResult] | None = [] if store is None else None
        if store is not None and self.resume:
            store.reopen_run(self.run_id, self.manifest)
            for result in store.trial_results(self.run_id):
                tally.add(result)
        elif store is not None:
            store.create_run(self.run_id, self.manifest)
        self.recorded = True
        ctx = RunContext(self.agent, self.timeout_s, self.concurrency, self.source)
        commits = _GroupCommit(store) if store is not None else None

        def accept(record: TrialRecord) -> None:
            if commits is not None:
                commits.write(record)
            tally.add(record.result)
            if kept is not None:
                kept.append(record.result)
            if progress is not None:
                progress(record.result)

        judged = _JudgeLanes(self, accept)
        try:
            try:
                await drive_lanes(self.executor, ctx, self.specs(), judged.submit)
                await judged.drain()
            finally:
                judged.abandon()
            if commits is not None:
                commits.flush()
        except BaseException:
            if commits is not None:
                commits.save()
            self._finish(tally, "interrupted", started, quiet=True)
            raise
        summary = self._finish(tally, "completed", started)
        return RunReport(self.run_id, self.manifest, summary, kept, store)

    def _finish(
        self, tally: Tally, status: str, started: float, *, quiet: bool = False
    ) -> RunSummary:
        """The run's summary, stored with its status (`invalid` for a completed run that
        is not valid). `quiet`: the run is failing already; a store that cannot take this
        write (full, locked, damaged) leaves the run `running`, which resumes as well."""
        summary = summary_with_scorecard(
            self.run_id,
            self.manifest,
            tally.results,
            task_infos(self.suite),
            max_error_rate=self.max_error_rate,
            config=self.scorecard,
        )
        if status == "completed" and not summary.valid:
            status = "invalid"
        # The suite's wall time, an evaluation-program figure (proctor.loop.program);
        # a resumed run counts this session's time only.
        wall_time_s = round(time.perf_counter() - started, 3)
        summary = summary.model_copy(update={"status": status, "wall_time_s": wall_time_s})
        if self.store is not None:
            try:
                self.store.finish_run(self.run_id, status, summary)
            except StoreError:
                if not quiet:
                    raise
        return summary

    def run(self, progress: ProgressFn | None = None) -> RunReport:
        return asyncio.run(self.run_async(progress))


@contextlib.contextmanager
def _collector_sees_the_run_only() -> Iterator[None]:
    """What exists when a run starts (modules, the suite, its domains: AgentDojo's hold
    tens of thousands of objects) is kept out of the cyclic collector's walks while the
    run lasts (`gc.freeze`), each full collection walking what the run made: 9% of
    proctor's CPU on the AgentDojo workspace sample (benchmarks/agentdojo_speed.py).
    Handed back after the run, collectable again; a run beside it loses only the gain."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def rarer_collections(young: int = 0, full: int = 0) -> Iterator[None]:
    """The cyclic collector's thresholds raised to at least `young` (its young generation)
    and `full` (its oldest) while the block runs, restored after; a collector switched off
    (a young threshold of 0) stays off. What a run or a regrade makes is freed by
    reference counting; the collector's walks over it, at CPython's thresholds, cost a
    share of their CPU (YOUNG_COLLECTION_EVERY, run/regrade.py FULL_COLLECTION_EVERY)."""
    before = gc.get_threshold()
    was_young, middle, was_full = before
    if was_young:
        gc.set_threshold(max(was_young, young), middle, max(was_full, full))
    try:
        yield
    finally:
        gc.set_threshold(*before)


class _GroupCommit:
    """Trials encoded as they come, inserted together and committed (each atomically).

    A trial is encoded when it is accepted (an error there is its own, raised at once),
    and the group's trials are inserted just before its commit: the same transaction,
    so no trial is durable, or seen by another connection, any later; but the inserts
    run one after another rather than between two trials' grading, where each of their
    statements handed the interpreter to the agents' thread and back (a trial's CPU
    ~5% less in `benchmarks/overhead.py`, measured alternated with writing each at once).
    A trial whose insert fails alone (stored twice) leaves none of its rows, the others
    are committed, and its error is raised after the commit; a failing store (a full
    disk) fails the group. A failure on the timer is raised by the next write or flush,
    never lost in the event loop's log.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        #: The group's trials, encoded, to be inserted at its commit.
        self.pending: list[EncodedTrial] = []
        self.timer: asyncio.TimerHandle | None = None
        self.failed: Exception | None = None

    def write(self, record: TrialRecord) -> None:
        if self.failed is not None:
            raise self.failed
        if not self.pending:
            self.store.begin()
            self.timer = asyncio.get_running_loop().call_later(COMMIT_EVERY_S, self._on_time)
        self.pending.append(
            self.store.encoded_trial(record.result, record.trace, record.answer, record.outcome)
        )
        if len(self.pending) >= COMMIT_MAX:
            self.flush()

    def _on_time(self) -> None:
        try:
            self.flush()
        except Exception as exc:  # a full disk, a trial stored twice: raised by the run
            self.failed = exc

    def save(self) -> None:
        """On the way out of a failing run: commit what was written, or, if the store
        cannot, drop the group (its trials are not stored; a resumed run redoes them).
        A trial that failed alone was raised already (it ended the run)."""
        if not isinstance(self.failed, StoreError):
            self.failed = None
        try:
            self.flush()
        except StoreError:
            self.store.rollback()
        except Exception:  # a trial that failed alone, after the others were committed
            return

    def flush(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.failed is not None:
            raise self.failed
        pending, self.pending = self.pending, []
        alone: Exception | None = None
        for i, encoded in enumerate(pending):
            try:
                self.store.insert_trial(encoded)
            except StoreError:
                raise
            except Exception as exc:  # this trial alone: none of its rows are in
                alone = alone or exc
            except BaseException:  # an interrupt: `save` inserts the rest
                self.pending = pending[i + 1 :]
                raise
        self.store.commit()
        if alone is not None:
            raise alone


class _JudgeLanes:
    """Judging that overlaps the trials: up to `concurrency` trials are judged at once
    (their requests paced by the endpoint's scheduler), each stored when judged. A trial
    whose judging is cut short by an interrupted run is stored as a judge error, so the
    agent's work is kept and `regrade` can judge it later."""

    def __init__(self, runner: Runner, accept: Callable[[TrialRecord], None]) -> None:
        self.judging = runner.judging
        self.fidelity = runner.fidelity
        self.members = {t.id: t for t in runner.suite.tasks}
        self.accept = accept
        self.slots = asyncio.Semaphore(max(runner.concurrency, 1))
        self.pending: dict[tuple[str, int], tuple[asyncio.Task[None], TrialRecord]] = {}

    async def submit(self, record: TrialRecord) -> None:
        member = self.members.get(record.result.task_id)
        rubrics = member.rubrics if member is not None else ()
        judges = self.judging is not None and needs_judging(record.findings, rubrics)
        record.decide()  # the verdict before any judge: the fidelity judge reads it
        fidelity = self.fidelity
        if fidelity is not None and not judges:
            fidelity = fidelity if fidelity.selects(record.result, record.trace) else None
        if member is None or (not judges and fidelity is None):
            self.accept(record)
            return
        await self.slots.acquire()
        judging, key = self.judging, (record.result.task_id, record.result.trial)

        async def judge() -> None:
            findings = record.findings
            try:
                if judges and judging is not None:
                    findings = await apply_judges(
                        judging, findings, member.task, rubrics, record.trace, record.outcome
                    )
                    if fidelity is not None:  # it selects by the verdict after the judges
                        record.decide(findings)
                # without judges, `fidelity` was kept above only where it selects the trial
                if fidelity is not None and (
                    not judges or fidelity.selects(record.result, record.trace)
                ):
                    findings = await fidelity.apply(findings, member.task, record.trace)
            finally:
                self.slots.release()
            if self.pending.pop(key, None) is not None:
                record.decide(findings)
                self.accept(record)

        self.pending[key] = (asyncio.ensure_future(judge()), record)

    async def drain(self) -> None:
        while self.pending:
            await asyncio.gather(*(task for task, _ in list(self.pending.values())))

    def abandon(self) -> None:
        """Store the trials still being judged as judge errors (the run was cut short)."""
        for task, record in list(self.pending.values()):
            task.cancel()
            ended = f"{JUDGE_ERROR} the run ended before the judge answered"
            record.decide(record.findings.broken(ended))
            self.accept(record)
        self.pending.clear()
