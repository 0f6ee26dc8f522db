"""Regrading: the graders run again on stored traces, without the agent.

After a grader changes (or a task's expectations are fixed), a run's trials are judged
again from what the store kept: trace, answer, outcome, usage, latency. The result is a
new run (new id; the manifest says `regraded_from`) rather than an update in place, so
the old and new verdicts stay side by side and `proctor compare OLD NEW` shows what the
change did. Regraded trials share their source's trace in the store (no copy), and its
checks' rows where the graders made the same checks (`checks_of`).

A status decided before grading stands: a timeout, an infrastructure error, an agent
crash or protocol error (the checks the harness added are kept, as is a failed
`trace_integrity`, and the judged fidelity of a model user, `user_fidelity`, with the
`sim_error` it decided). A trial whose graders raised is graded again.
An imported session that carried no final state is regraded without state checks, as it
was graded on import.

Work is cut into shares of `SHARE` trials by key range (docs/architecture.md, Regrade at
scale). A pool runs them here, in worker processes or on Ray (run/pool.py): each worker
loads the tasks of its shares from their files (not the whole suite: two workers would
each load all of it first), reads its share of the store (a Ray worker, which may
be on another machine, gets the share's rows instead), grades it and encodes the rows
(packed into an SQLite image, out of this process: store/shares.py); this process
inserts them in share order, so the new run is the same whatever the number of
workers. Rubric judges run here only: they share one judge cache and endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proctor.core.manifest import Manifest
from proctor.core.results import SIMULATOR_CHECKS, TrialResult
from proctor.core.summary import RunSummary
from proctor.decide.scorecard import ScorecardConfig, summary_with_scorecard
from proctor.decide.summarize import DEFAULT_MAX_ERROR_RATE, Tally
from proctor.env.suite import Suite, SuiteTask
from proctor.grade.context import GradeContext
from proctor.grade.registry import grader_versions
from proctor.grade.state import state_recorded, without_state_checks
from proctor.run.judging import JUDGE_ERROR, apply_judges, needs_judging
from proctor.run.pool import InlinePool, Pool
from proctor.run.runner import rarer_collections, task_infos
from proctor.run.trial import (
    CRASH_CHECK,
    GRADER_ERROR,
    HARNESS_CHECKS,
    PROTOCOL_CHECK,
    Findings,
    decide,
    grade_trial,
)
from proctor.run.worker_source import ExecutorError, SuiteSource
from proctor.store.export import stored_summary
from proctor.store.shares import (
    PACKABLE,
    EncodedShare,
    PackedShare,
    detach_shares,
    insert_share,
)
from proctor.store.sqlite import (
    GradedRows,
    Key,
    Store,
    StoredTrial,
    decode_graded,
    encode_trial,
)

if TYPE_CHECKING:
    from proctor.judge.grader import Judging

#: Trials per transaction.
BATCH = 2000
#: The cyclic collector's oldest-generation threshold while regrading (CPython's is 10).
#: A share's decoded traces outlive many young collections and so reach the oldest
#: generation; at CPython's threshold a full collection followed every few shares and
#: traversed the whole heap (the suite, the tally): 35-40% of a regrade's CPU, measured.
FULL_COLLECTION_EVERY = 1000
#: Trials per share: what one worker reads, grades and hands back at a time.
SHARE = 500
#: The smallest share of a pool's last ones. Towards the end of a run shares shrink, to
#: the trials left over twice the workers (`_share_size`), so that the workers finish
#: near together and the parent's last share is a small one: with shares of `SHARE` to
#: the end, one worker's last share ran while the other (and its core) had nothing left.
#: Each share costs a worker more than its trials (2 workers, 5,000 trials, CPU a trial,
#: same process, alternated: 198 us with no shrinking, 201 down to 250, 212 down to 100).
LAST_SHARE = 250
#: Workers from which a share comes back packed (store/shares.py). Packing moves about as
#: much CPU into a worker as it saves this process (measured): worth it only where this
#: process's rate caps the workers', not where one worker is the slower side.
PACK_FROM = 2

#: Checks a regrade keeps from the stored trial: the harness's, and the simulated user's
#: judged fidelity (no grader makes them again).
KEPT_CHECKS = (*HARNESS_CHECKS, *sorted(SIMULATOR_CHECKS))


class RegradeError(ValueError):
    """The run cannot be regraded with this suite; `str()` is one line for the user."""


@dataclass(frozen=True)
class RegradeReport:
    """What a regrade made: the new run's id, manifest and summary, and what moved."""

    run_id: str
    source_id: str
    manifest: Manifest
    summary: RunSummary
    #: Tasks whose content changed since the run: graded with their current expectations.
    changed_tasks: tuple[str, ...] = ()
    #: (status before, status after) -> trials, for trials whose status changed.
    flips: Counter[tuple[str, str]] = field(default_factory=Counter)


@rarer_collections(full=FULL_COLLECTION_EVERY)
def regrade(
    store: Store,
    run_ref: str,
    suite: Suite,
    *,
    max_error_rate: float | None = None,
    scorecard: ScorecardConfig | None = None,
    progress: Callable[[TrialResult], None] | None = None,
    judging: Judging | None = None,
    pool: Pool | None = None,
) -> RegradeReport:
    """Regrade the stored run `run_ref` (id, prefix or `latest`) into a new run, on
    `pool` (by default here); `judging` judges the tasks with rubrics (through the judge
    cache; here only). `progress` gets each result as summaries read it (checks without
    their evidence, no error text)."""
    source = store.run(run_ref)
    old = Manifest.from_json(source["manifest"])
    members: dict[str, SuiteTask] = {t.id: t for t in suite.tasks}
    run_tasks = list(old.suite.task_digests)
    missing = [task_id for task_id in run_tasks if task_id not in members]
    if missing:
        listed = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise RegradeError(f"run {source['run_id']} has tasks the suite lacks: {listed}")
    graded = Suite(suite.name, suite.roots, [members[task_id] for task_id in run_tasks])
    changed = [t.id for t in graded.tasks if t.task.digest != old.suite.task_digests[t.id]]
    earlier = stored_summary(source["summary"])
    if max_error_rate is None:
        max_error_rate = earlier.max_error_rate if earlier else DEFAULT_MAX_ERROR_RATE
    pool = pool or InlinePool()
    if judging is not None and not pool.inline:
        raise RegradeError("rubric judges run in this process only: regrade with one worker")
    workers = _workers_source(pool, store, graded)  # refuses what the pool cannot do
    loop = asyncio.new_event_loop() if judging is not None else None
    grade: Callable[[Share], EncodedShare | PackedShare] = grade_share
    if pool.inline:
        judged = None
        if loop is not None and judging is not None:
            judged = functools.partial(_judge_share, loop, judging, members)
        grade = functools.partial(grade_share, members=members, store=store, judged=judged)
    run_id = uuid.uuid4().hex[:12]
    manifest = _manifest(old, run_id, source["run_id"], graded, judging)
    stored = manifest.to_json()
    store.create_run(run_id, stored)
    tally, flips = Tally(), Counter[tuple[str, str]]()
    status = "interrupted"
    # what is written references only what holds by construction: the new run (created
    # here; its id set on each share), the source's trials (never deleted: their traces
    # and checks are shared) and the rows of the same share, inserted before its checks
    # under one savepoint (store/shares.py)
    unchecked = store.references_unchecked() if judging is None else contextlib.nullcontext()
    try:
        with unchecked:
            store.begin()
            try:
                uncommitted = 0
                shares = _shares(pool, store, workers, source["run_id"], run_id, old.trials)
                for share in pool.map(grade, shares):
                    verdicts = insert_share(store, share)
                    for result, before in verdicts.results(tally.checks_of, tally.metrics_of):
                        tally.results.append(result)
                        if result.status != before:
                            flips[(before, result.status)] += 1
                        if progress is not None:
                            progress(result)
                    uncommitted += len(verdicts.trials)
                    if uncommitted >= BATCH:
                        store.commit()
                        store.begin()
                        uncommitted = 0
                status = "completed"
            finally:
                store.commit()
                detach_shares(store)
    finally:
        if loop is not None:
            loop.close()
        summary = summary_with_scorecard(
            run_id,
            stored,
            tally.results,
            task_infos(graded),
            max_error_rate=max_error_rate,
            config=scorecard,
        )
        if status == "completed" and not summary.valid:
            status = "invalid"
        finished: dict[str, Any] = {"status": status}
        if earlier is not None and earlier.wall_time_s is not None:  # no agent ran: its source's
            finished["wall_time_s"] = earlier.wall_time_s
        summary = summary.model_copy(update=finished)
        store.finish_run(run_id, status, summary)
    return RegradeReport(run_id, source["run_id"], manifest, summary, tuple(changed), flips)


def _manifest(
    old: Manifest, run_id: str, source_id: str, graded: Suite, judging: Judging | None
) -> Manifest:
    """The source run's manifest, as a regrade of it with today's graders and tasks (the
    keys it had and these; `Manifest.to_json` writes no others)."""
    from proctor.core.version import __version__

    suite = old.suite.model_copy(
        update={
            "digest": graded.digest,
            "task_digests": {t.id: t.task.digest for t in graded.tasks},
        }
    )
    return old.model_copy(
        update={
            "run_id": run_id,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "regraded_from": source_id,
            "grader_versions": grader_versions(),
            "proctor_version": __version__,
            "suite": suite,
            "judges": judging.manifest() if judging is not None else None,
            "judge_model": ", ".join(judging.panel.models) if judging is not None else None,
        }
    )


@dataclass(frozen=True)
class Share:
    """A key range of the source run's trials, and what a worker grades it with."""

    suite: SuiteSource | None
    source_id: str
    run_id: str
    after: Key
    until: Key
    #: The store a worker on this machine reads the share from; or, for one that may be
    #: elsewhere, the share's rows as `Store.graded_rows` read them.
    store: str | None = None
    rows: GradedRows | None = None
    #: Whether the worker hands the share back packed (`PACK_FROM` workers or more).
    packed: bool = False


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic collection while a share is read, graded and encoded (as it was, after).
    A share allocates millions of objects, so young collections came every few hundred
    allocations and traversed the share's decoded traces again and again: 8-12% of an
    in-process regrade's CPU with the collector off, measured on a loaded machine (less
    on a quiet one, little in a worker, whose heap is small). What the share made is
    freed by reference counting when it is done; a cycle among it, by the next collection."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@_collector_paused()
def grade_share(
    share: Share,
    members: dict[str, SuiteTask] | None = None,
    store: Store | None = None,
    judged: Callable[[list[tuple[Findings, StoredTrial]]], list[Findings]] | None = None,
) -> EncodedShare | PackedShare:
    """Grade one share (in a worker: its tasks loaded from their files, the store opened
    for reading, each once per process) into its rows; `judged` runs the rubric judges
    on it."""
    if members is None:  # in a worker: the tasks of this share's key range
        assert share.suite is not None
        members = share.suite.members(share.suite.between(share.after[0], share.until[0]))
    if share.rows is not None:
        trials: Iterator[StoredTrial] = decode_graded(share.source_id, *share.rows)
    else:
        if store is None:
            assert share.store is not None
            if share.store not in _readers:
                _readers[share.store] = Store(share.store, readonly=True)
            store = _readers[share.store]
        trials = store.graded_trials(
            share.source_id, KEPT_CHECKS, after=share.after, until=share.until
        )
    out = EncodedShare()
    if judged is None:  # trial by trial: each freed while it is in the CPU's caches
        for stored in trials:
            _encoded(out, stored, *_regraded(stored, share.run_id, members))
    else:
        stored_trials = list(trials)
        graded = [_regraded(stored, share.run_id, members) for stored in stored_trials]
        findings = judged([(f, s) for (_, f), s in zip(graded, stored_trials, strict=True)])
        for (result, _), decided_on, stored in zip(graded, findings, stored_trials, strict=True):
            _encoded(out, stored, result, decided_on)
    return out.packed() if share.packed and PACKABLE else out


def _encoded(out: EncodedShare, stored: StoredTrial, result: TrialResult, on: Findings) -> None:
    """`result` decided `on` its findings, added to `out` encoded; where its checks are
    those stored for the trial regraded (by digest), it shares their rows, as it shares
    the trace: a regrade whose graders decide as before writes no check again."""
    decide(result, on)
    encoded = encode_trial(result, None, None, stored.source)
    out.add(encoded, stored.result.status, (stored.checks_of, stored.checks_digest))


#: A worker process's read-only handles on stores, by path.
_readers: dict[str, Store] = {}


def _workers_source(pool: Pool, store: Store, graded: Suite) -> SuiteSource | None:
    """What the pool's workers rebuild the suite from (None: they run here); a
    RegradeError when they could not rebuild it or read the store."""
    if pool.inline:
        return None
    if pool.local and str(store.path) == ":memory:":
        raise RegradeError("a store in memory cannot be read by worker processes")
    try:
        return pool.ship(SuiteSource.of(graded))
    except ExecutorError as exc:
        raise RegradeError(str(exc)) from None


def _shares(
    pool: Pool,
    store: Store,
    suite: SuiteSource | None,
    source_id: str,
    run_id: str,
    per_task: int,
) -> Iterator[Share]:
    """The shares of the source run (`per_task` trials per task), made as the pool asks
    for them."""
    path = str(store.path.resolve()) if pool.local and not pool.inline else None
    packed = not pool.inline and pool.workers >= PACK_FROM and PACKABLE
    for after, until in store.share_bounds(source_id, _share_size(pool, per_task)):
        rows = None
        if not pool.local:
            rows = store.graded_rows(source_id, KEPT_CHECKS, after, until, SHARE)
        yield Share(suite, source_id, run_id, after, until, path, rows, packed)


def _share_size(pool: Pool, per_task: int) -> Callable[[int], int]:
    """A share's trials, given those left (`LAST_SHARE`): all of `SHARE` in this process,
    which has no other worker to wait for. With workers, whole tasks of `per_task`
    trials where a share holds one: a task split between two workers was loaded, and its
    answers read, by both."""
    if pool.inline:
        return lambda left: SHARE

    def size(left: int) -> int:
        trials = min(SHARE, max(LAST_SHARE, left // (2 * pool.workers)))
        return trials - trials % per_task if 0 < per_task <= trials else trials

    return size


def _judge_share(
    loop: asyncio.AbstractEventLoop,
    judging: Judging,
    members: dict[str, SuiteTask],
    pairs: list[tuple[Findings, StoredTrial]],
) -> list[Findings]:
    return loop.run_until_complete(_judge_all(judging, pairs, members))


def _regraded(
    stored: StoredTrial, run_id: str, members: dict[str, SuiteTask]
) -> tuple[TrialResult, Findings]:
    """The new run's result of a stored trial (its verdict not decided) and its findings."""
    before = stored.result
    result = TrialResult(
        run_id=run_id,
        task_id=before.task_id,
        trial=before.trial,
        seed=before.seed,
        status=before.status,
        usage=before.usage,
        latency_s=before.latency_s,
        simulated_s=before.simulated_s,
        trace_id=before.trace_id,
        error=before.error,
    )
    if stored.outcome is None:  # a trial lost with its worker: nothing to grade
        return result, Findings(tuple(stored.kept), {}, before.status, before.error, graded=False)
    grader_broke = (before.error or "").startswith((GRADER_ERROR, JUDGE_ERROR))
    decided = any(c.name in (CRASH_CHECK, PROTOCOL_CHECK) for c in stored.kept) or (
        before.status in ("timeout", "error", "sim_error") and not grader_broke
    )
    member = members[before.task_id]
    task = member.task
    if not state_recorded(stored.trace):  # an imported session without its final state
        task, _ = without_state_checks(task)
    ctx = GradeContext(
        task, stored.trace, stored.outcome, before.usage, before.latency_s, member.domain
    )
    findings = grade_trial(
        ctx,
        stored.kept,
        before.status if decided else None,
        before.error if decided else None,
    )
    return result, findings


async def _judge_all(
    judging: Judging, batch: list[tuple[Findings, StoredTrial]], members: dict[str, SuiteTask]
) -> list[Findings]:
    """Judge a batch of regraded trials at once (the endpoint's scheduler paces them):
    each trial's findings, with its judges' checks where it has rubrics to judge."""

    async def judged(findings: Findings, stored: StoredTrial) -> Findings:
        member = members[stored.result.task_id]
        if not needs_judging(findings, member.rubrics):
            return findings
        return await apply_judges(
            judging, findings, member.task, member.rubrics, stored.trace, stored.outcome
        )

    return list(await asyncio.gather(*(judged(f, stored) for f, stored in batch)))
